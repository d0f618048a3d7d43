namespace AgentGovernance;

/// <summary>The base of every exception the Agent Governance client throws.</summary>
public abstract class AgentGovernanceException : Exception
{
    /// <summary>Creates the exception.</summary>
    protected AgentGovernanceException(string message, Exception? innerException = null) : base(message, innerException)
    {
    }
}
