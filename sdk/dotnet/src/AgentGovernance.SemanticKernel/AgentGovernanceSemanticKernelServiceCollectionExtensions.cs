using AgentGovernance;
using AgentGovernance.SemanticKernel;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.SemanticKernel;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the Agent Governance client and its Semantic Kernel filters; a <see cref="Kernel"/> resolved from the same services picks the filters up.</summary>
public static class AgentGovernanceSemanticKernelServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="IGovernanceClient"/> with <see cref="AgentGovernanceOptions"/> bound from the
    /// <paramref name="sectionName"/> section of <paramref name="configuration"/>, and the filters
    /// <see cref="GovernanceFunctionFilter"/> and <see cref="GovernanceAutoFunctionFilter"/>.
    /// </summary>
    public static IServiceCollection AddAgentGovernance(this IServiceCollection services, IConfiguration configuration, string sectionName = AgentGovernanceOptions.SectionName)
    {
        services.AddAgentGovernanceClient(configuration, sectionName);
        return services.AddGovernanceFilters();
    }

    /// <summary>Registers <see cref="IGovernanceClient"/> with options set by <paramref name="configure"/>, and the governance filters.</summary>
    public static IServiceCollection AddAgentGovernance(this IServiceCollection services, Action<AgentGovernanceOptions> configure)
    {
        services.AddAgentGovernanceClient(configure);
        return services.AddGovernanceFilters();
    }

    private static IServiceCollection AddGovernanceFilters(this IServiceCollection services)
    {
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IFunctionInvocationFilter, GovernanceFunctionFilter>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IAutoFunctionInvocationFilter, GovernanceAutoFunctionFilter>());
        return services;
    }
}
