using System.Diagnostics.CodeAnalysis;
using System.Globalization;
using Microsoft.SemanticKernel;

namespace AgentGovernance.SemanticKernel;

/// <summary>The soft result of a denied function call (ThrowOnDenied false), and how to recognize one.</summary>
public static class PolicyDenialResult
{
    /// <summary>The key of <see cref="FunctionResult.Metadata"/> under which a soft denial carries its <see cref="PolicyDecision"/>.</summary>
    public const string DecisionMetadataKey = "AgentGovernance.Decision";

    /// <summary>
    /// True when <paramref name="result"/> is the soft result of a denied call, which did not run;
    /// <paramref name="decision"/> then names the policy, rule and reason.
    /// </summary>
    public static bool TryGetPolicyDenial(this FunctionResult result, [NotNullWhen(true)] out PolicyDecision? decision)
    {
        ArgumentNullException.ThrowIfNull(result);
        if (result.Metadata is not null && result.Metadata.TryGetValue(DecisionMetadataKey, out var value) && value is PolicyDecision { IsAllowed: false } denial)
        {
            decision = denial;
            return true;
        }
        decision = null;
        return false;
    }

    /// <summary>What the caller (or the model) gets instead of the function's value: a sentence naming the policy and its reason.</summary>
    internal static FunctionResult Create(KernelFunction function, CultureInfo culture, string pluginName, PolicyDecision decision) =>
        new(function, $"The call {pluginName}.{function.Name} was denied by policy {decision.Policy}: {decision.Reason}", culture, new Dictionary<string, object?> { [DecisionMetadataKey] = decision });
}
