namespace AgentGovernance.AspNetCore;

/// <summary>How a <see cref="DecisionTokenVerifier"/> finds the gateway's keys and what it accepts.</summary>
public sealed class DecisionTokenVerifierOptions
{
    /// <summary>The configuration section the options are bound from by default.</summary>
    public const string SectionName = "AgentGovernance:DecisionTokens";

    /// <summary>The gateway's <c>/.well-known/jwks.json</c>; fetched at the first verification, again for an unknown key at most every <see cref="RefreshInterval"/>. One of this and <see cref="Jwks"/>.</summary>
    public Uri? JwksUrl { get; set; }

    /// <summary>The JWKS itself (its JSON), for a verifier that never fetches. One of this and <see cref="JwksUrl"/>.</summary>
    public string? Jwks { get; set; }

    /// <summary>The gateway's <c>PUBLIC_URL</c>, which tokens name as <c>iss</c>; unchecked when unset.</summary>
    public string? Issuer { get; set; }

    /// <summary>Clock skew allowed on expiry. Default 5 s.</summary>
    public TimeSpan ClockTolerance { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Least time between two JWKS fetches. Default 30 s.</summary>
    public TimeSpan RefreshInterval { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>Largest body the middleware reads to check its hash; a larger one is refused 413. Default 10 MiB.</summary>
    public long MaxBodyBytes { get; set; } = 10 * 1024 * 1024;

    /// <summary>The clock. Default the system's.</summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>The handler the JWKS is fetched through. Default a handler of the verifier's own.</summary>
    public HttpMessageHandler? HttpHandler { get; set; }

    /// <summary>Every problem of these options; empty when they are usable.</summary>
    public IReadOnlyList<string> Validate()
    {
        var problems = new List<string>();
        if ((JwksUrl is null) == (Jwks is null)) problems.Add("give one of JwksUrl and Jwks");
        if (JwksUrl is { } url && (!url.IsAbsoluteUri || (url.Scheme != Uri.UriSchemeHttp && url.Scheme != Uri.UriSchemeHttps))) problems.Add("JwksUrl must be an absolute http:// or https:// URL");
        if (ClockTolerance < TimeSpan.Zero) problems.Add("ClockTolerance must not be negative");
        if (RefreshInterval < TimeSpan.Zero) problems.Add("RefreshInterval must not be negative");
        if (MaxBodyBytes < 0) problems.Add("MaxBodyBytes must not be negative");
        return problems;
    }
}
