namespace AgentGovernance;

/// <summary>The gateway did not answer within the call's Timeout (thrown under fail-closed when ThrowOnDenied is true; when it is false the check answers a denial with source Timeout). The message names what timed out.</summary>
public sealed class GatewayTimeoutException : AgentGovernanceException
{
    /// <summary>Creates the exception.</summary>
    public GatewayTimeoutException(string message, Exception? innerException = null) : base(message, innerException)
    {
    }
}
