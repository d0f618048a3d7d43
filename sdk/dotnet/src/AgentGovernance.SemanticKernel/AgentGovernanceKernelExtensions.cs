using AgentGovernance.SemanticKernel;

namespace Microsoft.SemanticKernel;

/// <summary>Adds the governance filters to a <see cref="Kernel"/> built without dependency injection.</summary>
public static class AgentGovernanceKernelExtensions
{
    /// <summary>
    /// Adds <see cref="GovernanceFunctionFilter"/> and <see cref="GovernanceAutoFunctionFilter"/> to
    /// <paramref name="kernel"/>, ahead of its other filters, so no other filter can run a function
    /// the gateway did not allow. Adding them twice is a no-op.
    /// </summary>
    /// <param name="kernel">The kernel whose function calls are governed.</param>
    /// <param name="client">The client that asks the gateway; the caller owns (and disposes) it.</param>
    /// <param name="contextProviders">What supplies each call's enriched context.</param>
    /// <returns>The kernel.</returns>
    public static Kernel AddAgentGovernance(this Kernel kernel, AgentGovernance.IGovernanceClient client, params IEnumerable<IGovernanceContextProvider> contextProviders)
    {
        ArgumentNullException.ThrowIfNull(kernel);
        ArgumentNullException.ThrowIfNull(client);
        ArgumentNullException.ThrowIfNull(contextProviders);
        if (!kernel.FunctionInvocationFilters.Any(filter => filter is GovernanceFunctionFilter)) kernel.FunctionInvocationFilters.Insert(0, new GovernanceFunctionFilter(client, contextProviders));
        if (!kernel.AutoFunctionInvocationFilters.Any(filter => filter is GovernanceAutoFunctionFilter)) kernel.AutoFunctionInvocationFilters.Insert(0, new GovernanceAutoFunctionFilter());
        return kernel;
    }
}
