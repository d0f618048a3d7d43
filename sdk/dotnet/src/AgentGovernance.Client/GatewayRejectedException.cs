namespace AgentGovernance;

/// <summary>Why the gateway refused a request (proto/pdp.proto's status codes).</summary>
public enum GatewayRejection
{
    /// <summary>A missing, invalid or revoked API key.</summary>
    Unauthenticated,

    /// <summary>A missing or malformed field, named in the message.</summary>
    InvalidArgument,

    /// <summary>An agent unknown in the caller's organization.</summary>
    NotFound,

    /// <summary>A revoked agent.</summary>
    PermissionDenied,

    /// <summary>A tripped <c>rate_limit</c> condition (see <see cref="GatewayRejectedException.RetryAfter"/>) or the monthly quota used up.</summary>
    ResourceExhausted,
}

/// <summary>
/// The gateway refused the question itself. Thrown whatever ThrowOnDenied and the failure mode
/// say: it is an answer, not an outage, and not a decision to cache.
/// </summary>
public sealed class GatewayRejectedException : AgentGovernanceException
{
    /// <summary>Creates the exception.</summary>
    public GatewayRejectedException(GatewayRejection code, string message, TimeSpan? retryAfter = null)
        : base($"{code}: {message}")
    {
        Code = code;
        RetryAfter = retryAfter;
    }

    /// <summary>Why the gateway refused.</summary>
    public GatewayRejection Code { get; }

    /// <summary>For a tripped rate limit: how long until a retry can pass.</summary>
    public TimeSpan? RetryAfter { get; }
}
