namespace AgentGovernance;

/// <summary>What became of a checked call, for <see cref="IGovernanceClient.AuditAsync"/> (<c>POST /v1/audit</c>; the client adds the event and agent ids).</summary>
public sealed record AuditRecord
{
    /// <summary>The call's plugin.</summary>
    public required string PluginName { get; init; }

    /// <summary>The call's function.</summary>
    public required string FunctionName { get; init; }

    /// <summary>Whether the call ran under an allow (true) or was stopped by a deny.</summary>
    public required bool Allowed { get; init; }

    /// <summary>How long the call ran; held to 0-24 h, as the gateway takes it.</summary>
    public TimeSpan Duration { get; init; }

    /// <summary>The call's arguments (the gateway redacts them like every audit payload).</summary>
    public IReadOnlyDictionary<string, object?>? Arguments { get; init; }

    /// <summary>A short description of the outcome, never the result itself; cut to 2,048 characters.</summary>
    public string? ResultSummary { get; init; }

    /// <summary>The <see cref="PolicyDecision.DecisionId"/> of the check the call ran under.</summary>
    public string? DecisionId { get; init; }

    /// <summary>The trace id of the check.</summary>
    public string? TraceId { get; init; }

    /// <summary>When the call happened; default: when the record is made. The gateway's entry is stamped with it, however late the event is delivered.</summary>
    public DateTimeOffset? OccurredAt { get; init; }
}
