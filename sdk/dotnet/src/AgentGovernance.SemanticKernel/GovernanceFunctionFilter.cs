using System.Text.RegularExpressions;
using Microsoft.SemanticKernel;

namespace AgentGovernance.SemanticKernel;

/// <summary>
/// Checks every function call against the gateway's policies before it runs (plugin =
/// <see cref="KernelFunction.PluginName"/>, function = <see cref="KernelFunction.Name"/>,
/// arguments = the <see cref="KernelArguments"/>), whether the code or the model made it, and
/// audits it after it with its duration and a summary of its result. A denial throws
/// <see cref="PolicyDeniedException"/>, or, when ThrowOnDenied is false for the plugin, replaces
/// the result with a soft denial (<see cref="PolicyDenialResult.TryGetPolicyDenial"/>) without running the function.
/// Every result it lets through carries its decision (<see cref="PolicyDenialResult.DecisionMetadataKey"/>).
/// </summary>
public sealed partial class GovernanceFunctionFilter : IFunctionInvocationFilter
{
    /// <summary>The plugin name checked for a function that belongs to no plugin (a prompt invoked directly, a function passed to the model on its own).</summary>
    public const string NoPluginName = "Kernel";

    /// <summary>
    /// The function name checked for a prompt whose name Semantic Kernel made up
    /// (<c>InvokePromptAsync_&lt;guid&gt;</c>, <c>func&lt;guid&gt;</c>): a new one every call, which
    /// no policy could match and no audit query could group.
    /// </summary>
    public const string PromptFunctionName = "Prompt";

    private readonly IGovernanceClient client;
    private readonly IGovernanceContextProvider[] contextProviders;

    /// <summary>Creates the filter.</summary>
    /// <param name="client">The client that asks the gateway and writes the audit events.</param>
    /// <param name="contextProviders">What supplies each call's enriched context.</param>
    public GovernanceFunctionFilter(IGovernanceClient client, IEnumerable<IGovernanceContextProvider> contextProviders)
    {
        ArgumentNullException.ThrowIfNull(client);
        ArgumentNullException.ThrowIfNull(contextProviders);
        this.client = client;
        this.contextProviders = [.. contextProviders];
    }

    /// <summary>The function name a call of <paramref name="function"/> is checked and audited as.</summary>
    public static string FunctionNameOf(KernelFunction function)
    {
        ArgumentNullException.ThrowIfNull(function);
        return GeneratedName().IsMatch(function.Name) ? PromptFunctionName : function.Name;
    }

    /// <inheritdoc />
    public async Task OnFunctionInvocationAsync(FunctionInvocationContext context, Func<FunctionInvocationContext, Task> next)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(next);
        var pluginName = string.IsNullOrEmpty(context.Function.PluginName) ? NoPluginName : context.Function.PluginName;
        var functionName = FunctionNameOf(context.Function);
        var enriched = await ContextOfAsync(context).ConfigureAwait(false);
        var guarded = await client.GuardAsync<object?>(
            pluginName,
            functionName,
            context.Arguments,
            async _ =>
            {
                await next(context).ConfigureAwait(false);
                return context.Result.GetValue<object>();
            },
            enriched,
            context.CancellationToken).ConfigureAwait(false);
        context.Result = guarded.IsDenied
            ? PolicyDenialResult.Create(context.Function, context.Kernel.Culture, pluginName, functionName, guarded.Decision)
            : PolicyDenialResult.WithDecision(context.Result, guarded.Decision);
    }

    private async Task<IReadOnlyDictionary<string, object?>?> ContextOfAsync(FunctionInvocationContext invocation)
    {
        if (contextProviders.Length == 0) return null;
        var context = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var provider in contextProviders) await provider.AddContextAsync(invocation, context, invocation.CancellationToken).ConfigureAwait(false);
        return context;
    }

    /// <summary>Semantic Kernel's made-up prompt names: a prefix and a GUID without dashes.</summary>
    [GeneratedRegex("^(?:InvokePrompt(?:Streaming)?Async_|func)[0-9a-fA-F]{32}$")]
    private static partial Regex GeneratedName();
}
