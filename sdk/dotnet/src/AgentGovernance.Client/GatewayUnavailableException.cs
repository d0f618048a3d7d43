namespace AgentGovernance;

/// <summary>Neither gRPC nor HTTP reached a gateway that could decide (connection refused, UNAVAILABLE, a 5xx). Thrown under fail-closed.</summary>
public sealed class GatewayUnavailableException : AgentGovernanceException
{
    /// <summary>Creates the exception.</summary>
    public GatewayUnavailableException(string message, Exception? innerException = null) : this(message, cannotConnect: false, innerException)
    {
    }

    internal GatewayUnavailableException(string message, bool cannotConnect, Exception? innerException = null) : base(message, innerException)
    {
        CannotConnect = cannotConnect;
    }

    /// <summary>True when the transport could not connect at all: the cue for the HTTP fallback.</summary>
    internal bool CannotConnect { get; }
}
