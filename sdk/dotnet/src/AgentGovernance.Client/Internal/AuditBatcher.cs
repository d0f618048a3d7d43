using System.Globalization;
using System.Text.RegularExpressions;
using Microsoft.Extensions.Logging;

namespace AgentGovernance.Internal;

/// <summary>
/// Audit events on their way to the gateway: each is written ahead before <see cref="RecordAsync"/>
/// completes, then sent in batches (one <c>POST /v1/audit</c> of up to <c>batchSize</c> events,
/// every <c>batchSize</c> events or <c>interval</c>) and acknowledged in the file once the gateway
/// has them. What a crash left unacknowledged is sent again on the next start; its eventId makes
/// the gateway record it once. An event the gateway refuses (it names it by index) is dropped, a
/// resend cannot fix it, and the rest of its batch goes again at once; any other failure keeps
/// the batch for the next round, backing off.
/// </summary>
internal sealed partial class AuditBatcher : IAsyncDisposable
{
    private static readonly TimeSpan MaxBackoff = TimeSpan.FromSeconds(30);

    private readonly WriteAheadLog log;
    private readonly Func<IReadOnlyList<AuditEvent>, CancellationToken, Task> send;
    private readonly int batchSize;
    private readonly TimeSpan interval;
    private readonly ILogger logger;
    private readonly object sync = new();
    private readonly List<AuditEvent> pending;
    private readonly List<TaskCompletionSource<bool>> flushWaiters = [];
    private readonly SemaphoreSlim wake = new(0);
    private readonly CancellationTokenSource stopping = new();
    private readonly Task loop;
    private TimeSpan backoff = TimeSpan.Zero;

    public AuditBatcher(WriteAheadLog log, Func<IReadOnlyList<AuditEvent>, CancellationToken, Task> send, int batchSize, TimeSpan interval, ILogger logger)
    {
        this.log = log;
        this.send = send;
        this.batchSize = batchSize;
        this.interval = interval;
        this.logger = logger;
        pending = [.. log.Unacknowledged, .. log.Adopted];
        loop = Task.Run(RunAsync);
        if (pending.Count > 0) wake.Release();
    }

    /// <summary>Events written but not yet acknowledged by the gateway.</summary>
    public int Pending
    {
        get
        {
            lock (sync) return pending.Count;
        }
    }

    /// <summary>Durably queues the event: when this completes it is on disk and will reach the gateway.</summary>
    public async Task RecordAsync(AuditEvent auditEvent)
    {
        await log.AppendAsync(auditEvent).ConfigureAwait(false);
        bool full;
        lock (sync)
        {
            pending.Add(auditEvent);
            full = pending.Count >= batchSize;
        }
        if (full) wake.Release();
    }

    /// <summary>Sends what waits now; true when nothing is left unacknowledged.</summary>
    public async Task<bool> FlushAsync(CancellationToken cancellationToken)
    {
        var flushed = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (sync)
        {
            if (pending.Count == 0) return true;
            flushWaiters.Add(flushed);
        }
        wake.Release();
        return await flushed.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Sends what it can within <paramref name="timeout"/>; the rest stays in the file for the next start.</summary>
    public async Task CloseAsync(TimeSpan timeout)
    {
        using (var deadline = new CancellationTokenSource(timeout))
        {
            try
            {
                await FlushAsync(deadline.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                // What is left is resent by the next client on this file.
            }
        }
        await DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Stops sending without waiting for a send under way (its acknowledgement, if it comes, is
    /// not written: the next client resends those events and the gateway records each once), and
    /// closes the file, fsynced.
    /// </summary>
    public void Close()
    {
        if (stopping.IsCancellationRequested) return;
        stopping.Cancel();
        log.Close();
    }

    /// <summary>Stops sending and closes the file; what is left is resent by the next client on it.</summary>
    public async ValueTask DisposeAsync()
    {
        if (stopping.IsCancellationRequested) return;
        await stopping.CancelAsync().ConfigureAwait(false);
        await loop.ConfigureAwait(false);
        await log.DisposeAsync().ConfigureAwait(false);
        stopping.Dispose();
        wake.Dispose();
    }

    private async Task RunAsync()
    {
        while (!stopping.IsCancellationRequested)
        {
            try
            {
                await wake.WaitAsync(backoff > TimeSpan.Zero ? backoff : interval, stopping.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
            try
            {
                await SendPendingAsync().ConfigureAwait(false);
            }
#pragma warning disable CA1031 // The loop is the only sender: whatever went wrong, the events stay queued and written ahead for the next round.
            catch (Exception error)
#pragma warning restore CA1031
            {
                backoff = TimeSpan.FromTicks(Math.Min(MaxBackoff.Ticks, Math.Max(interval.Ticks, backoff.Ticks * 2)));
                LogRetry(logger, backoff.TotalSeconds, error.Message);
                AnswerFlushes(failed: true);
            }
        }
    }

    /// <summary>Sends the queue batch by batch until it is empty or a batch fails; then answers the flushes waiting.</summary>
    private async Task SendPendingAsync()
    {
        var failed = false;
        while (!failed && !stopping.IsCancellationRequested)
        {
            List<AuditEvent> batch;
            lock (sync) batch = pending.Count <= batchSize ? [.. pending] : pending.GetRange(0, batchSize);
            if (batch.Count == 0) break;
            try
            {
                await send(batch, stopping.Token).ConfigureAwait(false);
                await AcknowledgeAsync(batch).ConfigureAwait(false);
            }
            catch (GatewayRejectedException error) when (error.Code is GatewayRejection.InvalidArgument or GatewayRejection.NotFound)
            {
                await AcknowledgeAsync(Refused(batch, error)).ConfigureAwait(false);
            }
            catch (Exception error) when (error is AgentGovernanceException or OperationCanceledException)
            {
                failed = true;
                backoff = TimeSpan.FromTicks(Math.Min(MaxBackoff.Ticks, Math.Max(interval.Ticks, backoff.Ticks * 2)));
                LogRetry(logger, backoff.TotalSeconds, error.Message);
            }
        }
        if (!failed) backoff = TimeSpan.Zero;
        AnswerFlushes(failed);
    }

    /// <summary>
    /// The events of a refused batch that the gateway named (<c>events.&lt;index&gt;.</c>), dropped
    /// with a warning; when it named none, the whole batch: the body itself was refused.
    /// </summary>
    private List<AuditEvent> Refused(List<AuditEvent> batch, GatewayRejectedException error)
    {
        var named = RefusedIndex().Matches(error.Message).Select(match => int.Parse(match.Groups[1].ValueSpan, CultureInfo.InvariantCulture)).Where(index => index < batch.Count).ToHashSet();
        var refused = named.Count == 0 ? batch : [.. named.Order().Select(index => batch[index])];
        foreach (var auditEvent in refused) LogDropped(logger, auditEvent.EventId, error.Message);
        return refused;
    }

    [GeneratedRegex(@"\bevents\.(\d{1,3})\.")]
    private static partial Regex RefusedIndex();

    private async Task AcknowledgeAsync(List<AuditEvent> events)
    {
        var eventIds = events.ConvertAll(auditEvent => auditEvent.EventId);
        lock (sync)
        {
            // A batch is the front of the queue (events are only added at its end): removed as a
            // range, one move of what is left, rather than a lookup for every event still waiting.
            if (IsFront(events)) pending.RemoveRange(0, events.Count);
            else
            {
                var acknowledged = eventIds.ToHashSet(StringComparer.Ordinal);
                pending.RemoveAll(auditEvent => acknowledged.Contains(auditEvent.EventId));
            }
        }
        try
        {
            await log.AcknowledgeAsync(eventIds).ConfigureAwait(false);
        }
        catch (IOException error)
        {
            // The events stay in the file: the next start resends them and the gateway records each once.
            LogAckFailed(logger, error.Message);
        }
    }

    /// <summary>Under <c>sync</c>: whether <paramref name="events"/> are the first events of the queue, in its order.</summary>
    private bool IsFront(List<AuditEvent> events)
    {
        if (events.Count > pending.Count) return false;
        for (var i = 0; i < events.Count; i++)
        {
            if (!ReferenceEquals(events[i], pending[i])) return false;
        }
        return true;
    }

    /// <summary>Answers the flushes waiting, unless events recorded meanwhile still wait for a round that has not failed.</summary>
    private void AnswerFlushes(bool failed)
    {
        List<TaskCompletionSource<bool>> waiting;
        bool empty;
        lock (sync)
        {
            empty = pending.Count == 0;
            if (!empty && !failed) return;
            waiting = [.. flushWaiters];
            flushWaiters.Clear();
        }
        foreach (var waiter in waiting) waiter.TrySetResult(empty);
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Audit event {EventId} dropped: the gateway refused it ({Reason})")]
    private static partial void LogDropped(ILogger logger, string eventId, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Audit events kept for a retry in {Seconds} s: {Reason}")]
    private static partial void LogRetry(ILogger logger, double seconds, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Audit acknowledgement not written ({Reason}); the events will be resent and recorded once")]
    private static partial void LogAckFailed(ILogger logger, string reason);
}
