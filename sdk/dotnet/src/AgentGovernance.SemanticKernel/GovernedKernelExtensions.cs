using AgentGovernance;
using AgentGovernance.SemanticKernel;

namespace Microsoft.SemanticKernel;

/// <summary>Typed invocations of a governed kernel that say whether the call was denied, without an exception.</summary>
public static class GovernedKernelExtensions
{
    /// <summary>
    /// Invokes <paramref name="function"/> and answers its typed value with the decision it ran
    /// under, or, for a soft denial (ThrowOnDenied false), <see cref="GuardResult{T}.IsDenied"/>
    /// with no value: the function did not run. A denial with ThrowOnDenied true still throws
    /// <see cref="PolicyDeniedException"/>.
    /// </summary>
    /// <exception cref="InvalidOperationException">The kernel has no governance filter (<c>AddAgentGovernance</c>).</exception>
    public static async Task<GuardResult<T>> InvokeGuardedAsync<T>(this Kernel kernel, KernelFunction function, KernelArguments? arguments = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(kernel);
        ArgumentNullException.ThrowIfNull(function);
        var result = await kernel.InvokeAsync(function, arguments, cancellationToken).ConfigureAwait(false);
        var decision = PolicyDenialResult.DecisionOf(result) ?? throw new InvalidOperationException($"{function.Name} ran without a governance decision: the kernel has no governance filter (AddAgentGovernance)");
        return decision.IsAllowed ? new GuardResult<T>(decision, result.GetValue<T>()) : new GuardResult<T>(decision, default);
    }

    /// <summary>As <see cref="InvokeGuardedAsync{T}(Kernel, KernelFunction, KernelArguments?, CancellationToken)"/>, for the function <paramref name="functionName"/> of the plugin <paramref name="pluginName"/>.</summary>
    public static Task<GuardResult<T>> InvokeGuardedAsync<T>(this Kernel kernel, string pluginName, string functionName, KernelArguments? arguments = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(kernel);
        return kernel.InvokeGuardedAsync<T>(kernel.Plugins.GetFunction(pluginName, functionName), arguments, cancellationToken);
    }
}
