using System.ComponentModel;
using System.Globalization;
using Grpc.Net.Client;

namespace AgentGovernance;

/// <summary>
/// Options of a <see cref="GovernanceClient"/>: the adapter options (GatewayUrl, ApiKey, AgentId,
/// DefaultTrustTier, ThrowOnDenied, Timeout, SessionId, per-plugin overrides), the failure mode, and
/// the cache and audit settings. Bound from the <c>AgentGovernance</c> configuration section by
/// <c>services.AddAgentGovernanceClient(configuration)</c>.
/// </summary>
public sealed class AgentGovernanceOptions
{
    /// <summary>The configuration section the options are bound from by default.</summary>
    public const string SectionName = "AgentGovernance";

    /// <summary>The gRPC port used when <see cref="GrpcAddress"/> is not set.</summary>
    public const int DefaultGrpcPort = 50051;

    /// <summary>The gateway's HTTP address (the HTTP fallback and <c>POST /v1/audit</c>). Required. <c>https</c> also makes gRPC use TLS.</summary>
    public Uri? GatewayUrl { get; set; }

    /// <summary>An adapter API key (<c>POST /admin/api-keys</c>), sent as <c>x-api-key</c>. Required.</summary>
    public string? ApiKey { get; set; }

    /// <summary>The agent the calls are made for (<c>agent_&lt;id&gt;</c>). Required.</summary>
    public string? AgentId { get; set; }

    /// <summary>
    /// The adapter's tier hint sent with every check: <c>standard</c>, <c>elevated</c> or <c>restricted</c>.
    /// Policies read it as <c>context.adapter_trust_tier</c>; the agent's own record decides <c>agent.trust_tier</c>.
    /// </summary>
    public string DefaultTrustTier { get; set; } = "standard";

    /// <summary>A denial throws <see cref="PolicyDeniedException"/> (a timed-out check under fail-closed: <see cref="GatewayTimeoutException"/>) (default); when false it is a soft denial. Either way a denied call does not run.</summary>
    public bool ThrowOnDenied { get; set; } = true;

    /// <summary>How long a check may take, both transports together; also each audit send. Default 5 s.</summary>
    public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary><see cref="Timeout"/> in seconds, the name of earlier versions (configuration that sets it still works).</summary>
    [Obsolete("Use Timeout (a TimeSpan).")]
    [EditorBrowsable(EditorBrowsableState.Never)]
    public double TimeoutSeconds
    {
        get => Timeout.TotalSeconds;
        set => Timeout = DurationOf(value);
    }

    /// <summary>
    /// The session the calls belong to (docs/policies.md "Sessions"): policies remember what a
    /// session did (<c>session.labels</c>, <c>session.called(...)</c>). 1 to 128 characters of
    /// <c>A-Z a-z 0-9 . _ : -</c>; unset: the agent's own scope. <see cref="GovernanceSession.Use"/>
    /// names the session of the calls of one flow (a conversation, a request) instead.
    /// </summary>
    public string? SessionId { get; set; }

    /// <summary>
    /// The handler the HTTP transport (the fallback, <c>POST /v1/audit</c>, approvals) sends
    /// through: a proxy, client certificates, a test double. The client does not dispose it.
    /// Default: a <see cref="SocketsHttpHandler"/> of its own.
    /// </summary>
    public HttpMessageHandler? HttpHandler { get; set; }

    /// <summary>
    /// Changes the gRPC channel's options after the client set its own (its HTTP/2 handler,
    /// <c>MaxReconnectBackoff</c>): credentials, message sizes, a handler of your own
    /// (<see cref="GrpcChannelOptions.HttpHandler"/>), a logger factory.
    /// </summary>
    public Action<GrpcChannelOptions>? ConfigureGrpcChannel { get; set; }

    /// <summary>Per-plugin overrides of <see cref="DefaultTrustTier"/>, <see cref="Timeout"/> and <see cref="ThrowOnDenied"/>, by plugin name (case-insensitive, as Semantic Kernel's plugin names).</summary>
    public IDictionary<string, PluginGovernanceOptions> Plugins { get; } = new Dictionary<string, PluginGovernanceOptions>(StringComparer.OrdinalIgnoreCase);

    /// <summary>Context sent with every check; policies read each entry as <c>context.&lt;name&gt;</c>. A call's own context wins over these.</summary>
    public IDictionary<string, string> Context { get; } = new Dictionary<string, string>(StringComparer.Ordinal);

    /// <summary>What happens when the gateway cannot answer: <see cref="FailureMode.FailClosed"/> (default) or <see cref="FailureMode.FailOpen"/>.</summary>
    public FailureMode FailureMode { get; set; } = FailureMode.FailClosed;

    /// <summary>The PDP's gRPC address, <c>host:port</c> or a URL. Default: <see cref="GatewayUrl"/>'s host on port 50051.</summary>
    public string? GrpcAddress { get; set; }

    /// <summary>Reuse decisions the gateway marked cacheable until their TTL or a Subscribe event. Default true.</summary>
    public bool CacheEnabled { get; set; } = true;

    /// <summary>The most decisions kept; the least recently used go first. Default 10,000.</summary>
    public int CacheMaxEntries { get; set; } = 10_000;

    /// <summary>
    /// The audit write-ahead file; one live client per file. Default: one file per client and
    /// process, <c>&lt;LocalApplicationData&gt;/agentgov/audit-&lt;AgentId&gt;-&lt;pid&gt;-&lt;n&gt;.wal</c>, so
    /// replicas, a web garden, a CLI run beside the service and several clients in one app each
    /// have their own; a client opening its default file first takes over what clients of
    /// processes that are gone left unacknowledged in theirs.
    /// </summary>
    public string? AuditWalPath { get; set; }

    /// <summary>
    /// When a recorded audit event is fsynced: <see cref="AuditDurability.GroupCommit"/> (default:
    /// written to the file at once, fsynced with the others of its <see cref="AuditSyncInterval"/>)
    /// or <see cref="AuditDurability.Sync"/> (fsynced before the call returns).
    /// </summary>
    public AuditDurability AuditDurability { get; set; } = AuditDurability.GroupCommit;

    /// <summary>The group commit's window: at most this long between an event's write and its fsync. Default 100 ms, at most 10 s.</summary>
    public TimeSpan AuditSyncInterval { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>Send queued audit events once this many wait. Default 50.</summary>
    public int AuditBatchSize { get; set; } = 50;

    /// <summary>Send queued audit events at least this often. Default 1 s.</summary>
    public TimeSpan AuditFlushInterval { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary><see cref="AuditFlushInterval"/> in seconds, the name of earlier versions.</summary>
    [Obsolete("Use AuditFlushInterval (a TimeSpan).")]
    [EditorBrowsable(EditorBrowsableState.Never)]
    public double AuditFlushIntervalSeconds
    {
        get => AuditFlushInterval.TotalSeconds;
        set => AuditFlushInterval = DurationOf(value);
    }

    /// <summary>After gRPC could not connect, checks use HTTP this long before gRPC is tried again. Default 5 s.</summary>
    public TimeSpan GrpcRetryInterval { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary><see cref="GrpcRetryInterval"/> in seconds, the name of earlier versions.</summary>
    [Obsolete("Use GrpcRetryInterval (a TimeSpan).")]
    [EditorBrowsable(EditorBrowsableState.Never)]
    public double GrpcRetrySeconds
    {
        get => GrpcRetryInterval.TotalSeconds;
        set => GrpcRetryInterval = DurationOf(value);
    }

    /// <summary>
    /// How long <see cref="IGovernanceClient.GuardAsync{T}"/> waits for a person to decide a call a
    /// <c>require_approval</c> rule holds (docs/approvals.md). Default 300 s (the rule's default
    /// timeout), at most <see cref="MaxApprovalWait"/>; zero does not wait: the pending call is
    /// denied at once.
    /// </summary>
    public TimeSpan ApprovalWait { get; set; } = TimeSpan.FromSeconds(300);

    /// <summary><see cref="ApprovalWait"/> in seconds, the name of earlier versions.</summary>
    [Obsolete("Use ApprovalWait (a TimeSpan).")]
    [EditorBrowsable(EditorBrowsableState.Never)]
    public double ApprovalWaitSeconds
    {
        get => ApprovalWait.TotalSeconds;
        set => ApprovalWait = double.IsFinite(value) && value >= 0 && value <= MaxSeconds ? TimeSpan.FromSeconds(value) : TimeSpan.MinValue;
    }

    /// <summary>The longest <see cref="ApprovalWait"/>, in seconds: a guarded call blocks its caller for as long as it waits.</summary>
    public const double MaxApprovalWaitSeconds = 3600;

    /// <summary>The longest <see cref="ApprovalWait"/>.</summary>
    public static readonly TimeSpan MaxApprovalWait = TimeSpan.FromSeconds(MaxApprovalWaitSeconds);

    /// <summary>Every problem of these options, all at once; empty when they are usable.</summary>
    public IReadOnlyList<string> Validate()
    {
        var problems = new List<string>();
        if (GatewayUrl is null) problems.Add("GatewayUrl is required");
        else if (!GatewayUrl.IsAbsoluteUri || (GatewayUrl.Scheme != Uri.UriSchemeHttp && GatewayUrl.Scheme != Uri.UriSchemeHttps)) problems.Add("GatewayUrl must be an absolute http:// or https:// URL");
        if (string.IsNullOrWhiteSpace(ApiKey)) problems.Add("ApiKey is required");
        if (string.IsNullOrWhiteSpace(AgentId)) problems.Add("AgentId is required");
        if (string.IsNullOrWhiteSpace(DefaultTrustTier)) problems.Add("DefaultTrustTier must not be empty");
        CheckDuration(Timeout, nameof(Timeout), problems);
        if (SessionId is not null && !GovernanceSession.IsValid(SessionId)) problems.Add(GovernanceSession.Rule(nameof(SessionId)));
        foreach (var (plugin, overrides) in Plugins)
        {
            if (overrides.Timeout is { } timeout) CheckDuration(timeout, $"Plugins:{plugin}:Timeout", problems);
            if (overrides.TrustTier is { } tier && string.IsNullOrWhiteSpace(tier)) problems.Add($"Plugins:{plugin}:TrustTier must not be empty");
        }
        if (!Enum.IsDefined(FailureMode)) problems.Add("FailureMode must be fail-closed or fail-open");
        if (!Enum.IsDefined(AuditDurability)) problems.Add("AuditDurability must be GroupCommit or Sync");
        if (AuditSyncInterval <= TimeSpan.Zero || AuditSyncInterval > TimeSpan.FromSeconds(10)) problems.Add("AuditSyncInterval must be more than 0 and at most 10 seconds");
        if (CacheMaxEntries < 0) problems.Add("CacheMaxEntries must be at least 0");
        if (AuditBatchSize < 1) problems.Add("AuditBatchSize must be at least 1");
        CheckDuration(AuditFlushInterval, nameof(AuditFlushInterval), problems);
        CheckDuration(GrpcRetryInterval, nameof(GrpcRetryInterval), problems);
        if (ApprovalWait < TimeSpan.Zero || ApprovalWait > MaxApprovalWait)
        {
            problems.Add(string.Create(CultureInfo.InvariantCulture, $"ApprovalWait must be between 0 and {MaxApprovalWaitSeconds} seconds"));
        }
        return problems;
    }

    /// <summary>The longest wait a <see cref="CancellationTokenSource"/> timer takes is about 49 days; past it every call would fail at once.</summary>
    internal const double MaxSeconds = int.MaxValue / 1000.0;

    private static void CheckDuration(TimeSpan duration, string name, List<string> problems)
    {
        if (duration <= TimeSpan.Zero) problems.Add($"{name} must be more than 0");
        else if (duration.TotalSeconds > MaxSeconds) problems.Add(string.Create(CultureInfo.InvariantCulture, $"{name} must be at most {MaxSeconds} seconds"));
    }

    /// <summary>
    /// A number of seconds of the options of earlier versions as a duration; one that is not a
    /// positive number becomes zero and one past <see cref="MaxSeconds"/> the largest duration,
    /// so that validation names the problem rather than the configuration binder throwing.
    /// </summary>
    internal static TimeSpan DurationOf(double seconds) =>
        !double.IsFinite(seconds) || seconds <= 0 ? TimeSpan.Zero : seconds > MaxSeconds ? TimeSpan.MaxValue : TimeSpan.FromSeconds(seconds);
}

/// <summary>What one plugin's calls may set differently from the client-wide options; null keeps the client's value.</summary>
public sealed class PluginGovernanceOptions
{
    /// <summary>The tier hint for this plugin's checks (<c>standard</c>, <c>elevated</c>, <c>restricted</c>).</summary>
    public string? TrustTier { get; set; }

    /// <summary>How long this plugin's checks may take.</summary>
    public TimeSpan? Timeout { get; set; }

    /// <summary><see cref="Timeout"/> in seconds, the name of earlier versions.</summary>
    [Obsolete("Use Timeout (a TimeSpan).")]
    [EditorBrowsable(EditorBrowsableState.Never)]
    public double? TimeoutSeconds
    {
        get => Timeout?.TotalSeconds;
        set => Timeout = value is { } seconds ? AgentGovernanceOptions.DurationOf(seconds) : null;
    }

    /// <summary>Whether a denial of this plugin's calls throws.</summary>
    public bool? ThrowOnDenied { get; set; }
}

/// <summary>When a recorded audit event is fsynced to the write-ahead file (README "Audit events").</summary>
public enum AuditDurability
{
    /// <summary>
    /// The default: written to the file before the call returns (a crash of the process loses
    /// nothing), fsynced once per <see cref="AgentGovernanceOptions.AuditSyncInterval"/> for
    /// every event of that window: a power loss or operating-system crash loses at most the
    /// events of the last window.
    /// </summary>
    GroupCommit,

    /// <summary>Fsynced before the call returns (events recorded together share one fsync): nothing recorded is lost, at about a millisecond per call.</summary>
    Sync,
}

/// <summary>What a client does when the gateway cannot answer (README "What happens when").</summary>
[TypeConverter(typeof(FailureModeConverter))]
public enum FailureMode
{
    /// <summary><c>fail-closed</c>, the default, for production: no decision, no call.</summary>
    FailClosed,

    /// <summary><c>fail-open</c>, for low-risk migration windows only: the call is allowed and a failure-mode audit event is written.</summary>
    FailOpen,
}

/// <summary>Reads <c>fail-closed</c> and <c>fail-open</c> (the names the other SDKs use) as well as the enum's own names from configuration.</summary>
public sealed class FailureModeConverter : EnumConverter
{
    /// <summary>Creates the converter.</summary>
    public FailureModeConverter() : base(typeof(FailureMode))
    {
    }

    /// <inheritdoc />
    public override object? ConvertFrom(ITypeDescriptorContext? context, CultureInfo? culture, object value)
    {
        if (value is string text)
        {
            switch (text.Trim().ToLowerInvariant())
            {
                case "fail-closed" or "failclosed": return FailureMode.FailClosed;
                case "fail-open" or "failopen": return FailureMode.FailOpen;
                default: throw new FormatException($"FailureMode must be fail-closed or fail-open, not {text}");
            }
        }
        return base.ConvertFrom(context, culture, value);
    }
}
