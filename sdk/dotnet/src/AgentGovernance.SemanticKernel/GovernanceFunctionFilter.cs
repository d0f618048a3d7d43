using Microsoft.SemanticKernel;

namespace AgentGovernance.SemanticKernel;

/// <summary>
/// Checks every function call against the gateway's policies before it runs (plugin =
/// <see cref="KernelFunction.PluginName"/>, function = <see cref="KernelFunction.Name"/>,
/// arguments = the <see cref="KernelArguments"/>), whether the code or the model made it, and
/// audits it after it with its duration and a summary of its result. A denial throws
/// <see cref="PolicyDeniedException"/>, or, when ThrowOnDenied is false for the plugin, replaces
/// the result with a soft denial (<see cref="PolicyDenialResult.TryGetPolicyDenial"/>) without running the function.
/// </summary>
public sealed class GovernanceFunctionFilter : IFunctionInvocationFilter
{
    /// <summary>The plugin name checked for a function that belongs to no plugin (a prompt invoked directly, a function passed to the model on its own).</summary>
    public const string NoPluginName = "Kernel";

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

    /// <inheritdoc />
    public async Task OnFunctionInvocationAsync(FunctionInvocationContext context, Func<FunctionInvocationContext, Task> next)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(next);
        var pluginName = string.IsNullOrEmpty(context.Function.PluginName) ? NoPluginName : context.Function.PluginName;
        var enriched = await ContextOfAsync(context).ConfigureAwait(false);
        var guarded = await client.GuardAsync<object?>(
            pluginName,
            context.Function.Name,
            context.Arguments,
            async _ =>
            {
                await next(context).ConfigureAwait(false);
                return context.Result.GetValue<object>();
            },
            enriched,
            context.CancellationToken).ConfigureAwait(false);
        if (guarded.IsDenied) context.Result = PolicyDenialResult.Create(context.Function, context.Kernel.Culture, pluginName, guarded.Decision);
    }

    private async Task<IReadOnlyDictionary<string, object?>?> ContextOfAsync(FunctionInvocationContext invocation)
    {
        if (contextProviders.Length == 0) return null;
        var context = new Dictionary<string, object?>(StringComparer.Ordinal);
        foreach (var provider in contextProviders) await provider.AddContextAsync(invocation, context, invocation.CancellationToken).ConfigureAwait(false);
        return context;
    }
}
