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
    /// bound from the <paramref name="sectionName"/> section of <paramref name="configuration"/> and
    /// validated when the host starts (<c>ValidateOnStart</c>: every problem at once).
    /// </summary>
    public static IServiceCollection AddAgentGovernanceClient(this IServiceCollection services, IConfiguration configuration, string sectionName = AgentGovernanceOptions.SectionName)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configuration);
        services.AddOptions<AgentGovernanceOptions>().Bind(configuration.GetSection(sectionName)).ValidateOnStart();
        return services.AddClient();
    }

    /// <summary>Registers <see cref="IGovernanceClient"/> as a singleton, with options set by <paramref name="configure"/> and validated when the host starts.</summary>
    public static IServiceCollection AddAgentGovernanceClient(this IServiceCollection services, Action<AgentGovernanceOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<AgentGovernanceOptions>().Configure(configure).ValidateOnStart();
        return services.AddClient();
    }

    /// <summary>
    /// Registers a keyed <see cref="IGovernanceClient"/> named <paramref name="name"/>
    /// (<c>[FromKeyedServices("name")]</c>), with named options bound from the
    /// <paramref name="sectionName"/> section (default <c>AgentGovernance:&lt;name&gt;</c>): several
    /// clients in one app, for several agents or gateways, each with its own write-ahead file.
    /// </summary>
    public static IServiceCollection AddAgentGovernanceClient(this IServiceCollection services, string name, IConfiguration configuration, string? sectionName = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(configuration);
        services.AddOptions<AgentGovernanceOptions>(name).Bind(configuration.GetSection(sectionName ?? $"{AgentGovernanceOptions.SectionName}:{name}")).ValidateOnStart();
        return services.AddNamedClient(name);
    }

    /// <summary>Registers a keyed <see cref="IGovernanceClient"/> named <paramref name="name"/>, with options set by <paramref name="configure"/>.</summary>
    public static IServiceCollection AddAgentGovernanceClient(this IServiceCollection services, string name, Action<AgentGovernanceOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<AgentGovernanceOptions>(name).Configure(configure).ValidateOnStart();
        return services.AddNamedClient(name);
    }

    private static IServiceCollection AddClient(this IServiceCollection services)
    {
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<AgentGovernanceOptions>, AgentGovernanceOptionsValidator>());
        services.TryAddSingleton<IGovernanceClient>(provider => new GovernanceClient(
            provider.GetRequiredService<IOptions<AgentGovernanceOptions>>().Value,
            provider.GetService<ILoggerFactory>()));
        return services;
    }

    private static IServiceCollection AddNamedClient(this IServiceCollection services, string name)
    {
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<AgentGovernanceOptions>, AgentGovernanceOptionsValidator>());
        services.TryAddKeyedSingleton<IGovernanceClient>(name, (provider, _) => new GovernanceClient(
            provider.GetRequiredService<IOptionsMonitor<AgentGovernanceOptions>>().Get(name),
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
