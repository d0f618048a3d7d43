namespace AgentGovernance;

/// <summary>The gateway did not answer within the call's TimeoutSeconds (thrown when ThrowOnDenied is true and the failure mode is fail-closed).</summary>
public sealed class GatewayTimeoutException : AgentGovernanceException
{
    /// <summary>Creates the exception.</summary>
    public GatewayTimeoutException(string message, Exception? innerException = null) : base(message, innerException)
    {
    }
}
