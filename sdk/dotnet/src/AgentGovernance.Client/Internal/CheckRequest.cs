using System.Text.Json;

namespace AgentGovernance.Internal;

/// <summary>One permission check, as both transports send it.</summary>
internal sealed record CheckRequest(
    string AgentId,
    string Plugin,
    string Function,
    IReadOnlyDictionary<string, JsonElement> Arguments,
    IReadOnlyDictionary<string, JsonElement> Context,
    string TrustTier,
    string? ApprovalId = null,
    string? SessionId = null);

/// <summary>What applies to one call of a plugin: its overrides over the client-wide options.</summary>
internal sealed record PluginCallOptions(string TrustTier, TimeSpan Timeout, bool ThrowOnDenied)
{
    public static PluginCallOptions For(AgentGovernanceOptions options, string plugin)
    {
        options.Plugins.TryGetValue(plugin, out var overrides);
        return new PluginCallOptions(
            overrides?.TrustTier ?? options.DefaultTrustTier,
            overrides?.Timeout ?? options.Timeout,
            overrides?.ThrowOnDenied ?? options.ThrowOnDenied);
    }
}
