using AgentGovernance.AspNetCore;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Adds the decision token middleware to an app.</summary>
public static class DecisionTokenApplicationBuilderExtensions
{
    /// <summary>
    /// Refuses every request after this point without a valid decision token for it (registered
    /// with <c>services.AddDecisionTokenVerifier(...)</c>). Put it before anything that acts on
    /// the request; to guard only some routes, branch (<c>app.UseWhen(...)</c>).
    /// </summary>
    public static IApplicationBuilder UseDecisionTokens(this IApplicationBuilder app)
    {
        ArgumentNullException.ThrowIfNull(app);
        return app.UseMiddleware<DecisionTokenMiddleware>();
    }
}

/// <summary>Registers the decision token verifier.</summary>
public static class DecisionTokenServiceCollectionExtensions
{
    /// <summary>Registers a <see cref="DecisionTokenVerifier"/> singleton with options set by <paramref name="configure"/>, validated when the host starts.</summary>
    public static IServiceCollection AddDecisionTokenVerifier(this IServiceCollection services, Action<DecisionTokenVerifierOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<DecisionTokenVerifierOptions>().Configure(configure).ValidateOnStart();
        return services.AddVerifier();
    }

    /// <summary>Registers a <see cref="DecisionTokenVerifier"/> singleton with options bound from the <paramref name="sectionName"/> section (<c>JwksUrl</c>, <c>Issuer</c>, <c>ClockTolerance</c>, ...).</summary>
    public static IServiceCollection AddDecisionTokenVerifier(this IServiceCollection services, IConfiguration configuration, string sectionName = DecisionTokenVerifierOptions.SectionName)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configuration);
        services.AddOptions<DecisionTokenVerifierOptions>().Bind(configuration.GetSection(sectionName)).ValidateOnStart();
        return services.AddVerifier();
    }

    private static IServiceCollection AddVerifier(this IServiceCollection services)
    {
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<DecisionTokenVerifierOptions>, DecisionTokenOptionsValidator>());
        services.TryAddSingleton(provider => provider.GetRequiredService<IOptions<DecisionTokenVerifierOptions>>().Value);
        services.TryAddSingleton(provider => new DecisionTokenVerifier(provider.GetRequiredService<DecisionTokenVerifierOptions>()));
        return services;
    }
}

/// <summary>What the decision token of a request proved.</summary>
public static class DecisionTokenHttpContextExtensions
{
    /// <summary>The decision the request's token proved; null when the middleware did not run on it.</summary>
    public static VerifiedDecision? GetVerifiedDecision(this HttpContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        return context.Features.Get<VerifiedDecision>();
    }
}

internal sealed class DecisionTokenOptionsValidator : IValidateOptions<DecisionTokenVerifierOptions>
{
    public ValidateOptionsResult Validate(string? name, DecisionTokenVerifierOptions options)
    {
        var problems = options.Validate();
        return problems.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(problems);
    }
}
