namespace AgentGovernance;

/// <summary>Where a decision came from.</summary>
public enum DecisionSource
{
    /// <summary>The gateway, over gRPC.</summary>
    Grpc,

    /// <summary>The gateway, over the HTTP fallback (<c>POST /v1/check</c>).</summary>
    Http,

    /// <summary>The decision cache: an earlier cacheable answer on the current policy version.</summary>
    Cache,

    /// <summary>No answer within the timeout: denied under fail-closed (whatever ThrowOnDenied says), allowed under fail-open.</summary>
    Timeout,

    /// <summary>The gateway could not answer and the failure mode is fail-open: the call proceeds without a decision.</summary>
    FailOpen,
}

/// <summary>The answer to a check: the gateway's decision, or the client's own when the gateway did not answer (<see cref="Source"/> Timeout or FailOpen).</summary>
public sealed record PolicyDecision
{
    /// <summary>Whether the call may run.</summary>
    public required bool IsAllowed { get; init; }

    /// <summary>Why: the deciding rule's reason (or, without a decision, what went wrong).</summary>
    public string Reason { get; init; } = "";

    /// <summary>The deciding policy; <c>default</c> when no policy applied; empty without a decision.</summary>
    public string Policy { get; init; } = "";

    /// <summary>The deciding rule (its name, or <c>&lt;policy&gt;#&lt;index&gt;</c>); empty when no rule fired.</summary>
    public string Rule { get; init; } = "";

    /// <summary>The organization's policy version the decision was made on.</summary>
    public long PolicyVersion { get; init; }

    /// <summary>The request's trace id.</summary>
    public string TraceId { get; init; } = "";

    /// <summary>The gateway's audit entry of the decision (<c>aud_&lt;id&gt;</c>); audit events of the call name it.</summary>
    public string DecisionId { get; init; } = "";

    /// <summary>Whether the gateway let SDKs reuse this decision.</summary>
    public bool Cacheable { get; init; }

    /// <summary>How long a cacheable decision may be reused.</summary>
    public TimeSpan CacheTtl { get; init; }

    /// <summary>False when the gateway's MODE=audit let a denial through (allowed, with the denying policy and reason), and for a decision the client made itself.</summary>
    public bool Enforced { get; init; } = true;

    /// <summary>Where the decision came from.</summary>
    public required DecisionSource Source { get; init; }

    /// <summary>
    /// True when a <c>require_approval</c> rule holds the call until a person decides
    /// (docs/approvals.md): <see cref="IsAllowed"/> is false, and <see cref="ApprovalId"/> names the
    /// approval to wait for (<see cref="IGovernanceClient.WaitForApprovalAsync"/>) and to check the
    /// identical call again with, which it then lets through once.
    /// </summary>
    public bool IsPending { get; init; }

    /// <summary>With <see cref="IsPending"/>: the approval the gateway opened for the call (<c>appr_&lt;id&gt;</c>); empty otherwise.</summary>
    public string ApprovalId { get; init; } = "";

    /// <summary>With <see cref="IsPending"/>: when the approval expires; null otherwise.</summary>
    public DateTimeOffset? ApprovalExpiresAt { get; init; }

    /// <summary><c>allow</c>, <c>deny</c> or <c>pending</c>, as the gateway's audit trail writes it.</summary>
    public string Decision => IsAllowed ? "allow" : IsPending ? "pending" : "deny";
}
