namespace AgentGovernance.AspNetCore;

/// <summary>What a valid decision token says of the decision that let the request through.</summary>
public sealed record VerifiedDecision
{
    /// <summary>The decision id, its audit entry's (<c>aud_&lt;id&gt;</c>).</summary>
    public required string DecisionId { get; init; }

    /// <summary>The agent the request was made for.</summary>
    public required string AgentId { get; init; }

    /// <summary>The agent's organization.</summary>
    public required string OrgId { get; init; }

    /// <summary>The action decided (<c>write:orders</c>).</summary>
    public required string Action { get; init; }

    /// <summary>The approval that lifted a hold on the request, when one did.</summary>
    public string? ApprovalId { get; init; }

    /// <summary>When the token expires.</summary>
    public required DateTimeOffset ExpiresAt { get; init; }

    /// <summary>The edge sidecar that decided, when one did.</summary>
    public string? SidecarId { get; init; }
}
