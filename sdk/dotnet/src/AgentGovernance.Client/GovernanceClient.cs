using System.Collections;
using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using AgentGovernance.Internal;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace AgentGovernance;

/// <summary>
/// The agent-side adapter: gRPC to the gateway's PDP by default, the HTTP fallback
/// (<c>POST /v1/check</c>) when gRPC cannot connect; cacheable decisions reused until their TTL
/// or a Subscribe event; audit events batched behind a local write-ahead file. One instance per
/// agent and write-ahead file, shared by every caller (it is thread-safe); dispose it to stop
/// following changes and to send the audit events still queued.
/// </summary>
public sealed partial class GovernanceClient : IGovernanceClient, IDisposable
{
    /// <summary>The longest result summary and duration <c>POST /v1/audit</c> takes.</summary>
    private const int MaxSummaryLength = 2048;
    private const double MaxDurationMs = 86_400_000;
    private const int MaxAuditArgumentsBytes = 256 * 1024;

    /// <summary>The first pause between two asks of an approval's status, doubled after each up to the second.</summary>
    private static readonly TimeSpan FirstApprovalPoll = TimeSpan.FromMilliseconds(250);
    private static readonly TimeSpan MaxApprovalPoll = TimeSpan.FromSeconds(5);

    private readonly AgentGovernanceOptions options;
    private readonly ILogger logger;
    private readonly JsonArguments json = new();
    private readonly GrpcPdpTransport grpc;
    private readonly HttpPdpTransport http;
    private readonly DecisionCache cache;
    private readonly PolicyChangeFollower follower;
    private readonly AuditBatcher audits;
    private readonly Dictionary<string, object?> fixedContext;
    private readonly TimeSpan grpcRetry;
    private long grpcDownUntil;
    private int disposed;

    /// <summary>
    /// A client with <paramref name="options"/>. Opens the audit write-ahead file (refused when
    /// another live client holds it) and resends the events a previous client left unacknowledged.
    /// </summary>
    /// <exception cref="ArgumentException">The options are not usable; the message names every problem.</exception>
    /// <exception cref="InvalidOperationException">Another live client holds the audit write-ahead file.</exception>
    public GovernanceClient(AgentGovernanceOptions options, ILoggerFactory? loggerFactory = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        var problems = options.Validate();
        if (problems.Count > 0) throw new ArgumentException($"Invalid AgentGovernance options: {string.Join("; ", problems)}", nameof(options));
        this.options = options;
        logger = (loggerFactory ?? NullLoggerFactory.Instance).CreateLogger<GovernanceClient>();
        fixedContext = options.Context.ToDictionary(entry => entry.Key, entry => (object?)entry.Value, StringComparer.Ordinal);
        grpcRetry = options.GrpcRetryInterval;
        grpc = new GrpcPdpTransport(GrpcAddressOf(options), options.ApiKey!, grpcRetry, options.ConfigureGrpcChannel);
        http = new HttpPdpTransport(options.GatewayUrl!, options.ApiKey!, options.HttpHandler);
        cache = new DecisionCache(options.CacheMaxEntries);
        follower = new PolicyChangeFollower(grpc, cache, options.Timeout, logger);
        var auditTimeout = options.Timeout;
        audits = new AuditBatcher(
            options.AuditWalPath is { } walPath
                ? WriteAheadLog.Open(walPath, options.AuditDurability, options.AuditSyncInterval)
                : WriteAheadLog.OpenDefault(DefaultWalDirectory(), options.AgentId!, options.AuditDurability, options.AuditSyncInterval),
            (batch, token) => http.SendAuditAsync(batch, auditTimeout, token),
            options.AuditBatchSize,
            options.AuditFlushInterval,
            logger);
    }

    /// <inheritdoc />
    public int PendingAuditCount => audits.Pending;

    /// <inheritdoc />
    public Task<PolicyDecision> CheckAsync(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments = null, IReadOnlyDictionary<string, object?>? context = null, CancellationToken cancellationToken = default) =>
        CheckCoreAsync(pluginName, functionName, arguments, context, null, cancellationToken);

    /// <inheritdoc />
    public Task<PolicyDecision> CheckAsync(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments, IReadOnlyDictionary<string, object?>? context, string approvalId, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(approvalId);
        return CheckCoreAsync(pluginName, functionName, arguments, context, approvalId, cancellationToken);
    }

    /// <inheritdoc />
    public async Task<ApprovalStatus> WaitForApprovalAsync(string approvalId, TimeSpan? maxWait = null, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(approvalId);
        ThrowIfDisposed();
        var wait = maxWait ?? options.ApprovalWait;
        var bound = wait < TimeSpan.Zero ? TimeSpan.Zero : wait > AgentGovernanceOptions.MaxApprovalWait ? AgentGovernanceOptions.MaxApprovalWait : wait;
        var started = Stopwatch.GetTimestamp();
        var pause = FirstApprovalPoll;
        for (;;)
        {
            ApprovalStatus status;
            try
            {
                status = await http.ApprovalStatusAsync(approvalId, options.Timeout, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception error) when (error is GatewayUnavailableException or GatewayTimeoutException && !cancellationToken.IsCancellationRequested)
            {
                // An outage while waiting is waited out like a pending answer: the bound still holds.
                LogApprovalUnknown(logger, approvalId, error.Message);
                status = ApprovalStatus.Pending;
            }
            var left = bound - Stopwatch.GetElapsedTime(started);
            if (status != ApprovalStatus.Pending || left <= TimeSpan.Zero || Volatile.Read(ref disposed) == 1) return status;
            await Task.Delay(pause < left ? pause : left, cancellationToken).ConfigureAwait(false);
            pause = TimeSpan.FromTicks(Math.Min(pause.Ticks * 2, MaxApprovalPoll.Ticks));
        }
    }

    private async Task<PolicyDecision> CheckCoreAsync(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments, IReadOnlyDictionary<string, object?>? context, string? approvalId, CancellationToken cancellationToken)
    {
        var (request, call) = Prepare(pluginName, functionName, arguments, context);
        if (approvalId is not null) request = request with { ApprovalId = approvalId };
        var decision = await DecideObservedAsync(request, call, cancellationToken).ConfigureAwait(false);
        if (AppliedWithoutGateway(decision)) await RecordOutcomeAsync(request, decision, TimeSpan.Zero, AppliedSummary(decision)).ConfigureAwait(false);
        if (!decision.IsAllowed && call.ThrowOnDenied) throw DenialOf(pluginName, functionName, decision);
        return decision;
    }

    /// <summary>
    /// A decision the gateway's trail does not hold yet: one from the cache (recorded as a cached
    /// decision naming the one it reused), or the client's own when the gateway did not answer.
    /// </summary>
    private static bool AppliedWithoutGateway(PolicyDecision decision) =>
        decision.Source is DecisionSource.Cache or DecisionSource.Timeout or DecisionSource.FailOpen;

    private static string AppliedSummary(PolicyDecision decision) =>
        decision.Source == DecisionSource.Cache ? $"cached {decision.Decision}" : FailureSummary(decision);

    /// <summary>
    /// A pending call's outcome: its approval waited for, then, once approved, the identical call
    /// checked again with it; rejected, expired, used, or a wait that ended first is a denial saying why.
    /// </summary>
    private async Task<PolicyDecision> AfterApprovalAsync(CheckRequest request, PolicyDecision pending, PluginCallOptions call, CancellationToken cancellationToken)
    {
        var status = await WaitForApprovalAsync(pending.ApprovalId, null, cancellationToken).ConfigureAwait(false);
        if (status == ApprovalStatus.Approved) return await DecideAsync(request with { ApprovalId = pending.ApprovalId }, call, cancellationToken).ConfigureAwait(false);
        var why = status == ApprovalStatus.Pending
            ? string.Create(CultureInfo.InvariantCulture, $"was not decided within the {options.ApprovalWait.TotalSeconds:0.###} s GuardAsync waits (ApprovalWait)")
            : $"is {status.ToString().ToLowerInvariant()}";
        return pending with { IsPending = false, Reason = $"Approval {pending.ApprovalId} {why}: {pending.Reason}" };
    }

    /// <summary>A timeout is thrown as what it is (naming what timed out); a policy's denial as a denial.</summary>
    private static AgentGovernanceException DenialOf(string pluginName, string functionName, PolicyDecision decision) => decision switch
    {
        { Source: DecisionSource.Timeout } => new GatewayTimeoutException(decision.Reason),
        { IsPending: true } => new ApprovalPendingException(pluginName, functionName, decision),
        _ => new PolicyDeniedException(pluginName, functionName, decision),
    };

    /// <inheritdoc />
    public async Task<string> AuditAsync(AuditRecord record, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(record);
        ThrowIfDisposed();
        cancellationToken.ThrowIfCancellationRequested();
        var eventId = Guid.NewGuid().ToString("N");
        await audits.RecordAsync(new AuditEvent(eventId, AuditJson(eventId, record, record.Arguments is { Count: > 0 } given ? json.ForAudit(given) : null))).ConfigureAwait(false);
        GovernanceTelemetry.AuditEvents.Add(1);
        return eventId;
    }

    /// <inheritdoc />
    public async Task<GuardResult<T>> GuardAsync<T>(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments, Func<CancellationToken, Task<T>> invocation, IReadOnlyDictionary<string, object?>? context = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(invocation);
        var (request, call) = Prepare(pluginName, functionName, arguments, context);
        var decision = await DecideObservedAsync(request, call, cancellationToken).ConfigureAwait(false);
        if (decision.IsPending) decision = await AfterApprovalAsync(request, decision, call, cancellationToken).ConfigureAwait(false);
        if (!decision.IsAllowed)
        {
            if (AppliedWithoutGateway(decision)) await RecordOutcomeAsync(request, decision, TimeSpan.Zero, AppliedSummary(decision)).ConfigureAwait(false);
            if (call.ThrowOnDenied) throw DenialOf(pluginName, functionName, decision);
            return new GuardResult<T>(decision, default);
        }
        var started = Stopwatch.GetTimestamp();
        T value;
        try
        {
            value = await invocation(cancellationToken).ConfigureAwait(false);
        }
        catch (Exception error)
        {
            await RecordOutcomeAsync(request, decision, Stopwatch.GetElapsedTime(started), Flagged(decision, ResultSummary.OfException(error))).ConfigureAwait(false);
            throw;
        }
        await RecordOutcomeAsync(request, decision, Stopwatch.GetElapsedTime(started), Flagged(decision, SummaryOf(value))).ConfigureAwait(false);
        return new GuardResult<T>(decision, value);
    }

    /// <inheritdoc />
    public Task<bool> FlushAuditAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        return audits.FlushAsync(cancellationToken);
    }

    /// <summary>Stops following changes, sends the queued audit events for up to <see cref="AgentGovernanceOptions.Timeout"/> (the rest stays in the write-ahead file for the next client), and closes the connections.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref disposed, 1) == 1) return;
        await follower.DisposeAsync().ConfigureAwait(false);
        await audits.CloseAsync(options.Timeout).ConfigureAwait(false);
        grpc.Dispose();
        http.Dispose();
    }

    /// <summary>
    /// Closes the client without waiting on the network (no sync-over-async): stops following
    /// changes, fsyncs the write-ahead file and closes it, and closes the connections. The audit
    /// events still queued are not sent: they stay in the file, and the next client on it sends
    /// them. <see cref="DisposeAsync"/> sends them first; prefer it where it can be awaited.
    /// </summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref disposed, 1) == 1) return;
        follower.Stop();
        audits.Close();
        grpc.Dispose();
        http.Dispose();
    }

    /// <summary>The default result summary of a guarded call: the result's shape, never its content (<see cref="ResultSummary.Of"/>).</summary>
    public static string SummaryOf(object? value) => ResultSummary.Of(value);

    private (CheckRequest Request, PluginCallOptions Options) Prepare(string pluginName, string functionName, IReadOnlyDictionary<string, object?>? arguments, IReadOnlyDictionary<string, object?>? context)
    {
        ArgumentException.ThrowIfNullOrEmpty(pluginName);
        ArgumentException.ThrowIfNullOrEmpty(functionName);
        ThrowIfDisposed();
        var call = PluginCallOptions.For(options, pluginName);
        var request = new CheckRequest(
            options.AgentId!,
            pluginName,
            functionName,
            json.ForCheck(arguments, "arguments"),
            json.ForCheck(MergedContext(context), "context"),
            call.TrustTier,
            SessionId: GovernanceSession.Current ?? options.SessionId);
        return (request, call);
    }

    /// <summary>The options' context, overridden by the call's own.</summary>
    private IEnumerable<KeyValuePair<string, object?>> MergedContext(IReadOnlyDictionary<string, object?>? context)
    {
        if (context is null || context.Count == 0) return fixedContext;
        if (fixedContext.Count == 0) return context;
        var merged = new Dictionary<string, object?>(fixedContext, StringComparer.Ordinal);
        foreach (var (name, value) in context) merged[name] = value;
        return merged;
    }

    /// <summary>
    /// <see cref="DecideAsync"/> seen by the client's <see cref="GovernanceTelemetry"/>: an
    /// activity per check and the checks' counter and duration, each only while someone listens.
    /// </summary>
    private async Task<PolicyDecision> DecideObservedAsync(CheckRequest request, PluginCallOptions call, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        using var activity = GovernanceTelemetry.Source.StartActivity(GovernanceTelemetry.CheckActivity, ActivityKind.Client);
        activity?.SetTag(GovernanceTelemetry.PluginTag, request.Plugin);
        activity?.SetTag(GovernanceTelemetry.FunctionTag, request.Function);
        PolicyDecision decision;
        try
        {
            decision = await DecideAsync(request, call, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception error)
        {
            activity?.SetStatus(ActivityStatusCode.Error, error.Message);
            throw;
        }
        var source = GovernanceTelemetry.NameOf(decision.Source);
        if (activity is not null)
        {
            activity.SetTag(GovernanceTelemetry.DecisionTag, decision.Decision);
            activity.SetTag(GovernanceTelemetry.SourceTag, source);
            activity.SetTag(GovernanceTelemetry.PolicyTag, decision.Policy);
            activity.SetTag(GovernanceTelemetry.DecisionIdTag, decision.DecisionId);
        }
        if (GovernanceTelemetry.Checks.Enabled || GovernanceTelemetry.CheckDuration.Enabled)
        {
            var tags = new TagList
            {
                { GovernanceTelemetry.PluginTag, request.Plugin },
                { GovernanceTelemetry.FunctionTag, request.Function },
                { GovernanceTelemetry.DecisionTag, decision.Decision },
                { GovernanceTelemetry.SourceTag, source },
            };
            GovernanceTelemetry.Checks.Add(1, tags);
            GovernanceTelemetry.CheckDuration.Record(Stopwatch.GetElapsedTime(started).TotalSeconds, tags);
        }
        return decision;
    }

    /// <summary>
    /// The cache's answer, else the gateway's; without one, fail-open proceeds, and fail-closed
    /// denies a timeout (a denial with source Timeout, thrown as a GatewayTimeoutException when
    /// ThrowOnDenied is true: how a denial is shown never changes whether the call runs) and
    /// throws an outage. A refusal is always thrown (it is an answer, not an outage), and so is
    /// the caller's cancellation: a cancelled check never turns into an allow.
    /// </summary>
    private async Task<PolicyDecision> DecideAsync(CheckRequest request, PluginCallOptions call, CancellationToken cancellationToken)
    {
        // An answer to an approval is never cacheable, and a cached answer must not stand in for presenting one.
        var hash = options.CacheEnabled && request.ApprovalId is null ? JsonArguments.HashOf(request) : null;
        if (hash is not null && cache.TryGet(hash, out var cached)) return cached;
        PolicyDecision decision;
        try
        {
            decision = await EvaluateAsync(request, call.Timeout, cancellationToken).ConfigureAwait(false);
        }
        catch (GatewayTimeoutException error) when (!cancellationToken.IsCancellationRequested)
        {
            var timedOut = new GatewayTimeoutException($"The check of {request.Plugin}.{request.Function} timed out: {error.Message}", error);
            if (options.FailureMode == FailureMode.FailOpen) return Proceeding(DecisionSource.Timeout, timedOut);
            return new PolicyDecision { IsAllowed = false, Reason = timedOut.Message, Enforced = true, Source = DecisionSource.Timeout };
        }
        catch (GatewayUnavailableException error) when (!cancellationToken.IsCancellationRequested && options.FailureMode == FailureMode.FailOpen)
        {
            return Proceeding(DecisionSource.FailOpen, error);
        }
        if (hash is not null)
        {
            cache.Put(hash, decision);
            if (decision.Cacheable) follower.EnsureStarted();
        }
        return decision;
    }

    /// <summary>
    /// gRPC's answer, or HTTP's when gRPC cannot connect; then HTTP for GrpcRetrySeconds before
    /// gRPC is tried again (a gateway answers UNAVAILABLE while its database is away too, and one
    /// such answer must not cost the client gRPC for good). Both share the call's timeout.
    /// </summary>
    private async Task<PolicyDecision> EvaluateAsync(CheckRequest request, TimeSpan timeout, CancellationToken cancellationToken)
    {
        var started = Stopwatch.GetTimestamp();
        if (Environment.TickCount64 >= Volatile.Read(ref grpcDownUntil))
        {
            try
            {
                return await grpc.EvaluateAsync(request, timeout, cancellationToken).ConfigureAwait(false);
            }
            catch (GatewayUnavailableException error) when (error.CannotConnect)
            {
                LogGrpcDown(logger, grpcRetry.TotalSeconds, error.Message);
                Volatile.Write(ref grpcDownUntil, Environment.TickCount64 + (long)grpcRetry.TotalMilliseconds);
            }
        }
        var remaining = timeout - Stopwatch.GetElapsedTime(started);
        if (remaining <= TimeSpan.Zero) throw new GatewayTimeoutException(string.Create(CultureInfo.InvariantCulture, $"no answer within {timeout.TotalSeconds:0.###} s"));
        return await http.EvaluateAsync(request, remaining, cancellationToken).ConfigureAwait(false);
    }

    private PolicyDecision Proceeding(DecisionSource source, Exception error)
    {
        LogProceeding(logger, source, error.Message);
        return new PolicyDecision { IsAllowed = true, Reason = error.Message, Enforced = false, Source = source };
    }

    private static string FailureSummary(PolicyDecision decision) =>
        $"{(decision.Source == DecisionSource.FailOpen ? "fail-open" : "timeout")}: {(decision.IsAllowed ? "allowed" : "denied")} without a gateway decision ({decision.Reason})";

    /// <summary>A call that ran without a gateway decision says so in its audit event.</summary>
    private static string Flagged(PolicyDecision decision, string summary) =>
        decision.Source is DecisionSource.Timeout or DecisionSource.FailOpen ? $"{FailureSummary(decision)}; {summary}" : summary;

    /// <summary>The outcome of a checked call; written even when the caller has given up, since the call ran.</summary>
    private Task RecordOutcomeAsync(CheckRequest request, PolicyDecision decision, TimeSpan duration, string summary)
    {
        var eventId = Guid.NewGuid().ToString("N");
        var record = new AuditRecord
        {
            PluginName = request.Plugin,
            FunctionName = request.Function,
            Allowed = decision.IsAllowed,
            Duration = duration,
            ResultSummary = summary,
            DecisionId = decision.DecisionId,
            TraceId = decision.TraceId,
        };
        GovernanceTelemetry.AuditEvents.Add(1);
        // The check's own JSON of the arguments: the same values, already converted (finite, or the check was refused).
        return audits.RecordAsync(new AuditEvent(eventId, AuditJson(eventId, record, request.Arguments, cached: decision.Source == DecisionSource.Cache && decision.DecisionId.Length > 0)));
    }

    /// <summary>
    /// The body of <c>POST /v1/audit</c>, held to what the gateway takes: it refuses a longer
    /// summary or a duration out of range as malformed, and a refused event is dropped, so the
    /// caller would have been told an event was recorded that never reaches the trail.
    /// </summary>
    private byte[] AuditJson(string eventId, AuditRecord record, IReadOnlyDictionary<string, JsonElement>? arguments, bool cached = false)
    {
        var milliseconds = record.Duration.TotalMilliseconds;
        milliseconds = double.IsNaN(milliseconds) ? 0 : Math.Round(Math.Clamp(milliseconds, 0, MaxDurationMs), 3);
        using var body = new MemoryStream();
        using (var writer = new Utf8JsonWriter(body))
        {
            writer.WriteStartObject();
            writer.WriteString("eventId", eventId);
            writer.WriteString("agentId", options.AgentId);
            writer.WriteString("plugin", record.PluginName);
            writer.WriteString("function", record.FunctionName);
            if (arguments is { Count: > 0 } && ArgumentsJson(arguments) is { } argumentsJson)
            {
                writer.WritePropertyName("arguments");
                writer.WriteRawValue(argumentsJson, skipInputValidation: true);
            }
            writer.WriteString("decision", record.Allowed ? "allow" : "deny");
            writer.WriteNumber("durationMs", milliseconds);
            if (!string.IsNullOrEmpty(record.ResultSummary)) writer.WriteString("resultSummary", record.ResultSummary.Length > MaxSummaryLength ? record.ResultSummary[..MaxSummaryLength] : record.ResultSummary);
            if (!string.IsNullOrEmpty(record.DecisionId)) writer.WriteString("decisionId", record.DecisionId);
            if (!string.IsNullOrEmpty(record.TraceId)) writer.WriteString("traceId", record.TraceId);
            // When the call happened: an event delivered late (offline, retried) is stamped with it, not with its delivery.
            writer.WriteString("occurredAt", (record.OccurredAt ?? DateTimeOffset.UtcNow).UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture));
            if (cached) writer.WriteBoolean("cached", true);
            writer.WriteEndObject();
        }
        return body.ToArray();
    }

    /// <summary>
    /// The arguments' JSON, or null past <see cref="MaxAuditArgumentsBytes"/>: the gateway refuses a
    /// body over 1 MiB as malformed, and a refused event is dropped; without its arguments the
    /// event still names the call, and its decisionId links the decision entry that has them.
    /// </summary>
    private static byte[]? ArgumentsJson(IReadOnlyDictionary<string, JsonElement> arguments)
    {
        using var buffer = new MemoryStream();
        using (var writer = new Utf8JsonWriter(buffer)) JsonArguments.WriteObject(writer, arguments);
        return buffer.Length > MaxAuditArgumentsBytes ? null : buffer.ToArray();
    }

    private void ThrowIfDisposed() => ObjectDisposedException.ThrowIf(Volatile.Read(ref disposed) == 1, this);

    private static Uri GrpcAddressOf(AgentGovernanceOptions options)
    {
        var gateway = options.GatewayUrl!;
        if (string.IsNullOrWhiteSpace(options.GrpcAddress)) return new Uri($"{gateway.Scheme}://{gateway.Host}:{AgentGovernanceOptions.DefaultGrpcPort}");
        return options.GrpcAddress.Contains("://", StringComparison.Ordinal) ? new Uri(options.GrpcAddress) : new Uri($"{gateway.Scheme}://{options.GrpcAddress}");
    }

    private static string DefaultWalDirectory() =>
        Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.LocalApplicationData, Environment.SpecialFolderOption.Create), "agentgov");

    [LoggerMessage(Level = LogLevel.Information, Message = "gRPC cannot connect; checks use HTTP for {Seconds} s: {Reason}")]
    private static partial void LogGrpcDown(ILogger logger, double seconds, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Approval {ApprovalId}: status unknown for now: {Reason}")]
    private static partial void LogApprovalUnknown(ILogger logger, string approvalId, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Allowing a call without a gateway decision ({Source}): {Reason}")]
    private static partial void LogProceeding(ILogger logger, DecisionSource source, string reason);
}
