namespace AgentGovernance;

/// <summary>Where an approval stands (<c>GET /v1/approvals/:id</c>, docs/approvals.md).</summary>
public enum ApprovalStatus
{
    /// <summary>Nobody has decided yet (or the wait ended first).</summary>
    Pending,

    /// <summary>Approved: the identical call checked again with the approval goes through, once.</summary>
    Approved,

    /// <summary>Rejected: a call presenting it is denied.</summary>
    Rejected,

    /// <summary>Nobody decided before its expiry.</summary>
    Expired,

    /// <summary>Approved, and the call it approved went through: it lets nothing else through.</summary>
    Used,
}
