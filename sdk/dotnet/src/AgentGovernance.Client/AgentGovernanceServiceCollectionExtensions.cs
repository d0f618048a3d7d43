using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using AgentGovernance;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers the Agent Governance client with dependency injection.</summary>
public static class AgentGovernanceServiceCollectionExtensions
{
    /// <summary>
    /// Registers <see cref="IGovernanceClient"/> as a singleton, with <see cref="AgentGovernanceOptions"/>
    /// bound from the <paramref name="sectionName"/> section of <paramref name="configuration"/> and validated when the client is first resolved.
    /// </summary>
    public static IServiceCollection AddAgentGovernanceClient(this IServiceCollection services, IConfiguration configuration, string sectionName = AgentGovernanceOptions.SectionName)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configuration);
        services.AddOptions<AgentGovernanceOptions>().Bind(configuration.GetSection(sectionName));
        return services.AddClient();
    }

    /// <summary>Registers <see cref="IGovernanceClient"/> as a singleton, with options set by <paramref name="configure"/>.</summary>
    public static IServiceCollection AddAgentGovernanceClient(this IServiceCollection services, Action<AgentGovernanceOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<AgentGovernanceOptions>().Configure(configure);
        return services.AddClient();
    }

    private static IServiceCollection AddClient(this IServiceCollection services)
    {
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<AgentGovernanceOptions>, AgentGovernanceOptionsValidator>());
        services.TryAddSingleton<IGovernanceClient>(provider => new GovernanceClient(
            provider.GetRequiredService<IOptions<AgentGovernanceOptions>>().Value,
            provider.GetService<ILoggerFactory>()));
        return services;
    }
}

/// <summary>Validates <see cref="AgentGovernanceOptions"/> (every problem at once) when they are first used.</summary>
internal sealed class AgentGovernanceOptionsValidator : IValidateOptions<AgentGovernanceOptions>
{
    public ValidateOptionsResult Validate(string? name, AgentGovernanceOptions options)
    {
        var problems = options.Validate();
        return problems.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(problems);
    }
}
