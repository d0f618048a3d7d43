using AgentGov.Pdp.V1;
using Grpc.Core;
using Microsoft.Extensions.Logging;

namespace AgentGovernance.Internal;

/// <summary>
/// Keeps a Subscribe stream open from the cache's newest version, so that any change (policy
/// created, updated or deleted, agent revoked or changed, API key revoked) empties the cache
/// at once. The cache is live only while the stream is: started by the first cacheable answer,
/// resumed after a failure (backing off), stopped when the gateway's versions went backwards
/// until the next answer starts it again.
/// </summary>
internal sealed partial class PolicyChangeFollower : IAsyncDisposable
{
    private static readonly TimeSpan FirstBackoff = TimeSpan.FromMilliseconds(200);
    private static readonly TimeSpan MaxBackoff = TimeSpan.FromSeconds(5);

    private readonly GrpcPdpTransport grpc;
    private readonly DecisionCache cache;
    private readonly TimeSpan connectTimeout;
    private readonly ILogger logger;
    private readonly object sync = new();
    private readonly CancellationTokenSource stopping = new();
    private Task? following;

    public PolicyChangeFollower(GrpcPdpTransport grpc, DecisionCache cache, TimeSpan connectTimeout, ILogger logger)
    {
        this.grpc = grpc;
        this.cache = cache;
        this.connectTimeout = connectTimeout;
        this.logger = logger;
    }

    /// <summary>Starts following, unless it already does.</summary>
    public void EnsureStarted()
    {
        lock (sync)
        {
            if (following is { IsCompleted: false } || stopping.IsCancellationRequested) return;
            following = Task.Run(FollowAsync);
        }
    }

    /// <summary>Stops following without waiting for the stream to end (it ends by itself once cancelled).</summary>
    public void Stop()
    {
        lock (sync) stopping.Cancel();
    }

    public async ValueTask DisposeAsync()
    {
        Task? running;
        lock (sync)
        {
            stopping.Cancel();
            running = following;
        }
        if (running is not null) await running.ConfigureAwait(false);
        stopping.Dispose();
    }

    private async Task FollowAsync()
    {
        var token = stopping.Token;
        var backoff = FirstBackoff;
        while (!token.IsCancellationRequested)
        {
            var outcome = await FollowOnceAsync(token).ConfigureAwait(false);
            cache.SetLive(false);
            if (outcome == StreamOutcome.VersionsWentBack)
            {
                cache.Restart();
                return;
            }
            if (outcome == StreamOutcome.Delivered) backoff = FirstBackoff;
            try
            {
                await Task.Delay(backoff, token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
            backoff = TimeSpan.FromTicks(Math.Min(backoff.Ticks * 2, MaxBackoff.Ticks));
        }
    }

    private async Task<StreamOutcome> FollowOnceAsync(CancellationToken token)
    {
        var delivered = false;
        try
        {
            using var call = grpc.Subscribe(cache.KnownVersion, token);
            var reading = ReadAsync(call, () => delivered = true, token);
            // The gateway sends nothing until a change, so a connected channel (that the stream's
            // request went out on) is the sign the stream is open. A change made in between is
            // replayed by the stream, which starts after the cache's newest version.
            if (await ConnectedAsync(token).ConfigureAwait(false) && !reading.IsCompleted) cache.SetLive(true);
            await reading.ConfigureAwait(false);
            return delivered ? StreamOutcome.Delivered : StreamOutcome.Ended;
        }
        catch (RpcException error) when (error.StatusCode == StatusCode.InvalidArgument)
        {
            // Resuming from a version ahead of the organization's is refused every time, and every
            // answer (all below it) would go uncached.
            LogEnded(logger, error.Status.Detail);
            return StreamOutcome.VersionsWentBack;
        }
        catch (RpcException error)
        {
            LogEnded(logger, error.Status.Detail);
            return delivered ? StreamOutcome.Delivered : StreamOutcome.Ended;
        }
        catch (OperationCanceledException)
        {
            return StreamOutcome.Ended;
        }
    }

    private async Task ReadAsync(AsyncServerStreamingCall<PolicyChangeEvent> call, Action onEvent, CancellationToken token)
    {
        while (await call.ResponseStream.MoveNext(token).ConfigureAwait(false))
        {
            cache.Changed(call.ResponseStream.Current.PolicyVersion);
            onEvent();
        }
    }

    private async Task<bool> ConnectedAsync(CancellationToken token)
    {
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(token);
        deadline.CancelAfter(connectTimeout);
        try
        {
            await grpc.ConnectAsync(deadline.Token).ConfigureAwait(false);
            return true;
        }
        catch (Exception error) when (error is OperationCanceledException or InvalidOperationException)
        {
            return false;
        }
    }

    private enum StreamOutcome
    {
        Ended,
        Delivered,
        VersionsWentBack,
    }

    [LoggerMessage(Level = LogLevel.Debug, Message = "The Subscribe stream ended: {Reason}")]
    private static partial void LogEnded(ILogger logger, string reason);
}
