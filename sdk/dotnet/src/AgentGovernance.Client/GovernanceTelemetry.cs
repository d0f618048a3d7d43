using System.Diagnostics;
using System.Diagnostics.Metrics;

namespace AgentGovernance;

/// <summary>
/// The names under which the client reports what it does to OpenTelemetry (or any
/// <see cref="ActivityListener"/> and <see cref="MeterListener"/>): add
/// <see cref="SourceName"/> to tracing (<c>AddSource("AgentGovernance")</c>) and
/// <see cref="MeterName"/> to metrics (<c>AddMeter("AgentGovernance")</c>). Nothing is recorded
/// while nobody listens. Tags name the call, never its arguments.
/// </summary>
public static class GovernanceTelemetry
{
    /// <summary>The <see cref="ActivitySource"/> and <see cref="Meter"/> name.</summary>
    public const string SourceName = "AgentGovernance";

    /// <summary>The meter's name (the same as <see cref="SourceName"/>).</summary>
    public const string MeterName = SourceName;

    /// <summary>The activity of one check (<c>CheckAsync</c>, or the check of <c>GuardAsync</c> and the Semantic Kernel filter).</summary>
    public const string CheckActivity = "agentgov.check";

    /// <summary>Counter of checks answered, tagged <c>agentgov.decision</c> (allow, deny, pending) and <c>agentgov.source</c> (grpc, http, cache, timeout, failopen).</summary>
    public const string ChecksCounter = "agentgov.client.checks";

    /// <summary>Histogram of how long a check took, in seconds, tagged as <see cref="ChecksCounter"/>.</summary>
    public const string CheckDurationHistogram = "agentgov.client.check.duration";

    /// <summary>Counter of audit events written ahead.</summary>
    public const string AuditEventsCounter = "agentgov.client.audit.events";

    /// <summary>Tag: the call's plugin.</summary>
    public const string PluginTag = "agentgov.plugin";

    /// <summary>Tag: the call's function.</summary>
    public const string FunctionTag = "agentgov.function";

    /// <summary>Tag: allow, deny or pending.</summary>
    public const string DecisionTag = "agentgov.decision";

    /// <summary>Tag: where the decision came from (<see cref="DecisionSource"/>, lower case).</summary>
    public const string SourceTag = "agentgov.source";

    /// <summary>Tag (activities only): the deciding policy.</summary>
    public const string PolicyTag = "agentgov.policy";

    /// <summary>Tag (activities only): the gateway's audit entry of the decision.</summary>
    public const string DecisionIdTag = "agentgov.decision_id";

    internal static readonly ActivitySource Source = new(SourceName, typeof(GovernanceTelemetry).Assembly.GetName().Version?.ToString(3));

    internal static readonly Meter Meter = new(MeterName, typeof(GovernanceTelemetry).Assembly.GetName().Version?.ToString(3));

    internal static readonly Counter<long> Checks = Meter.CreateCounter<long>(ChecksCounter, "{check}", "Checks answered");

    internal static readonly Histogram<double> CheckDuration = Meter.CreateHistogram<double>(CheckDurationHistogram, "s", "How long a check took");

    internal static readonly Counter<long> AuditEvents = Meter.CreateCounter<long>(AuditEventsCounter, "{event}", "Audit events written ahead");

    internal static string NameOf(DecisionSource source) => source switch
    {
        DecisionSource.Grpc => "grpc",
        DecisionSource.Http => "http",
        DecisionSource.Cache => "cache",
        DecisionSource.Timeout => "timeout",
        _ => "failopen",
    };
}
