namespace AgentGovernance;

/// <summary>
/// <see cref="IGovernanceClient.CheckAsync(string, string, IReadOnlyDictionary{string, object?}?, IReadOnlyDictionary{string, object?}?, CancellationToken)"/>
/// with ThrowOnDenied: a <c>require_approval</c> rule holds the call until a person decides
/// (docs/approvals.md). A <see cref="PolicyDeniedException"/>, so code that stops on a denial
/// stops here too. Wait with <see cref="IGovernanceClient.WaitForApprovalAsync"/>, then check the
/// identical call again with <see cref="ApprovalId"/>. <see cref="IGovernanceClient.GuardAsync{T}"/>
/// waits itself instead of throwing this.
/// </summary>
public sealed class ApprovalPendingException : PolicyDeniedException
{
    /// <summary>Creates the exception for the pending <paramref name="decision"/> of <paramref name="pluginName"/>.<paramref name="functionName"/>.</summary>
    public ApprovalPendingException(string pluginName, string functionName, PolicyDecision decision)
        : base(pluginName, functionName, decision, MessageOf(pluginName, functionName, decision))
    {
    }

    /// <summary>The approval the gateway opened for the call.</summary>
    public string ApprovalId => Decision.ApprovalId;

    /// <summary>When the approval expires.</summary>
    public DateTimeOffset? ExpiresAt => Decision.ApprovalExpiresAt;

    private static string MessageOf(string plugin, string function, PolicyDecision decision)
    {
        ArgumentNullException.ThrowIfNull(decision);
        return $"{plugin}.{function} needs approval {decision.ApprovalId} ({decision.Policy}: {decision.Reason})";
    }
}
