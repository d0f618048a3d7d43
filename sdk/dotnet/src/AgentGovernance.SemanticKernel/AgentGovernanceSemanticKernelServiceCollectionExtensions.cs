using AgentGovernance;
using AgentGovernance.SemanticKernel;
using Microsoft.Extensions.Configuration;
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

    /// <summary>
    /// The filters go first among the filters registered, whenever this is called: a kernel runs
    /// its filters in registration order, the first outermost, so no filter registered earlier
    /// can run (or answer for) a function the gateway did not allow.
    /// </summary>
    private static IServiceCollection AddGovernanceFilters(this IServiceCollection services)
    {
        AddFirst<IFunctionInvocationFilter, GovernanceFunctionFilter>(services);
        AddFirst<IAutoFunctionInvocationFilter, GovernanceAutoFunctionFilter>(services);
        return services;
    }

    private static void AddFirst<TService, TFilter>(IServiceCollection services)
        where TService : class
        where TFilter : class, TService
    {
        if (services.Any(descriptor => descriptor.ServiceType == typeof(TService) && descriptor.ImplementationType == typeof(TFilter))) return;
        services.Insert(0, ServiceDescriptor.Singleton<TService, TFilter>());
    }
}
