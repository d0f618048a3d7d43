using System.Diagnostics.CodeAnalysis;
using System.Globalization;
using Microsoft.SemanticKernel;

namespace AgentGovernance.SemanticKernel;

/// <summary>The soft result of a denied function call (ThrowOnDenied false), and how to recognize one.</summary>
public static class PolicyDenialResult
{
    /// <summary>The key of <see cref="FunctionResult.Metadata"/> under which a governed call's result carries its <see cref="PolicyDecision"/> (allowed or denied).</summary>
    public const string DecisionMetadataKey = "AgentGovernance.Decision";

    /// <summary>
    /// True when <paramref name="result"/> is the soft result of a denied call, which did not run;
    /// <paramref name="decision"/> then names the policy, rule and reason.
    /// </summary>
    public static bool TryGetPolicyDenial(this FunctionResult result, [NotNullWhen(true)] out PolicyDecision? decision)
    {
        ArgumentNullException.ThrowIfNull(result);
        if (DecisionOf(result) is { IsAllowed: false } denial)
        {
            decision = denial;
            return true;
        }
        decision = null;
        return false;
    }

    /// <summary>The decision a governed call's result was made under; null for a call no governance filter saw.</summary>
    public static PolicyDecision? DecisionOf(FunctionResult result)
    {
        ArgumentNullException.ThrowIfNull(result);
        return result.Metadata is not null && result.Metadata.TryGetValue(DecisionMetadataKey, out var value) ? value as PolicyDecision : null;
    }

    /// <summary>The sentence a denied call answers: the caller's (or the model's) reading of the denial.</summary>
    public static string SentenceOf(string pluginName, string functionName, PolicyDecision decision)
    {
        ArgumentNullException.ThrowIfNull(decision);
        return $"The call {pluginName}.{functionName} was denied by policy {decision.Policy}: {decision.Reason}";
    }

    /// <summary>
    /// What the caller gets instead of the function's value: the sentence when the function's
    /// result can be text (a string, an object, a prompt's answer, nothing); for a function of
    /// another type (a <c>decimal</c>, a record), no value, so a typed <c>InvokeAsync&lt;T&gt;</c>
    /// answers <c>default</c> instead of throwing <see cref="InvalidCastException"/>
    /// (<c>InvokeGuardedAsync&lt;T&gt;</c> says whether it was denied). The decision is under
    /// <see cref="DecisionMetadataKey"/> either way.
    /// </summary>
    internal static FunctionResult Create(KernelFunction function, CultureInfo culture, string pluginName, string functionName, PolicyDecision decision) =>
        new(function, CanHoldText(function) ? SentenceOf(pluginName, functionName, decision) : null, culture, new Dictionary<string, object?> { [DecisionMetadataKey] = decision });

    /// <summary>The model always reads the sentence, whatever the function's type.</summary>
    internal static FunctionResult ForModel(FunctionResult result, PolicyDecision decision) =>
        new(result.Function, SentenceOf(string.IsNullOrEmpty(result.Function.PluginName) ? GovernanceFunctionFilter.NoPluginName : result.Function.PluginName, GovernanceFunctionFilter.FunctionNameOf(result.Function), decision), result.Culture, result.Metadata);

    /// <summary><paramref name="result"/> with <paramref name="decision"/> added to its metadata.</summary>
    internal static FunctionResult WithDecision(FunctionResult result, PolicyDecision decision)
    {
        var metadata = result.Metadata is null ? new Dictionary<string, object?>(1) : new Dictionary<string, object?>(result.Metadata);
        metadata[DecisionMetadataKey] = decision;
        return new FunctionResult(result) { Metadata = metadata };
    }

    private static bool CanHoldText(KernelFunction function)
    {
        var type = function.Metadata.ReturnParameter.ParameterType;
        if (type is null || type == typeof(void) || type == typeof(Task) || type == typeof(ValueTask)) return true;
        if (type.IsGenericType && (type.GetGenericTypeDefinition() == typeof(Task<>) || type.GetGenericTypeDefinition() == typeof(ValueTask<>))) type = type.GetGenericArguments()[0];
        return type.IsAssignableFrom(typeof(string)) || typeof(KernelContent).IsAssignableFrom(type) || type == typeof(FunctionResult);
    }
}
