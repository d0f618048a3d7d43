namespace AgentGovernance;

/// <summary>A policy denied the call (thrown when ThrowOnDenied is true). The call did not run.</summary>
public class PolicyDeniedException : AgentGovernanceException
{
    /// <summary>Creates the exception for a denial of <paramref name="pluginName"/>.<paramref name="functionName"/>.</summary>
    public PolicyDeniedException(string pluginName, string functionName, PolicyDecision decision)
        : this(pluginName, functionName, decision, MessageOf(pluginName, functionName, decision))
    {
    }

    /// <summary>Creates the exception with its own <paramref name="message"/>.</summary>
    protected PolicyDeniedException(string pluginName, string functionName, PolicyDecision decision, string message)
        : base(message)
    {
        ArgumentNullException.ThrowIfNull(decision);
        PluginName = pluginName;
        FunctionName = functionName;
        Decision = decision;
    }

    /// <summary>The plugin of the denied call.</summary>
    public string PluginName { get; }

    /// <summary>The function of the denied call.</summary>
    public string FunctionName { get; }

    /// <summary>The deciding rule's reason.</summary>
    public string Reason => Decision.Reason;

    /// <summary>The deciding policy.</summary>
    public string Policy => Decision.Policy;

    /// <summary>The deciding rule.</summary>
    public string Rule => Decision.Rule;

    /// <summary>The whole decision.</summary>
    public PolicyDecision Decision { get; }

    private static string MessageOf(string plugin, string function, PolicyDecision decision)
    {
        ArgumentNullException.ThrowIfNull(decision);
        var rule = decision.Rule.Length > 0 ? $" ({decision.Rule})" : "";
        return $"{plugin}.{function} denied by {decision.Policy}{rule}: {decision.Reason}";
    }
}
