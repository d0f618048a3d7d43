using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace AgentGovernance.Tests;

/// <summary>The options: the defaults of the README's "Options", binding from an <c>AgentGovernance</c> configuration section, and validation.</summary>
public sealed class OptionsTests
{
    private static IConfiguration Configuration(Dictionary<string, string?> values) => new ConfigurationBuilder().AddInMemoryCollection(values).Build();

    [Fact]
    public void The_defaults_are_those_of_the_README()
    {
        var options = new AgentGovernanceOptions();

        Assert.Equal("standard", options.DefaultTrustTier);
        Assert.True(options.ThrowOnDenied);
        Assert.Equal(5, options.TimeoutSeconds);
        Assert.Equal(FailureMode.FailClosed, options.FailureMode);
        Assert.True(options.CacheEnabled);
        Assert.Equal(["GatewayUrl is required", "ApiKey is required", "AgentId is required"], options.Validate());
    }

    [Fact]
    public void Every_option_binds_from_the_AgentGovernance_section_with_the_README_names()
    {
        var services = new ServiceCollection().AddAgentGovernanceClient(Configuration(new()
        {
            ["AgentGovernance:GatewayUrl"] = "https://gateway.example:8443",
            ["AgentGovernance:ApiKey"] = "agk_x",
            ["AgentGovernance:AgentId"] = "agent_1",
            ["AgentGovernance:DefaultTrustTier"] = "elevated",
            ["AgentGovernance:ThrowOnDenied"] = "false",
            ["AgentGovernance:TimeoutSeconds"] = "1.5",
            ["AgentGovernance:FailureMode"] = "fail-open",
            ["AgentGovernance:Plugins:FilePlugin:TrustTier"] = "restricted",
            ["AgentGovernance:Plugins:FilePlugin:TimeoutSeconds"] = "0.5",
            ["AgentGovernance:Plugins:FilePlugin:ThrowOnDenied"] = "true",
            ["AgentGovernance:Context:department"] = "finance",
            ["AgentGovernance:GrpcAddress"] = "pdp.example:9000",
            ["AgentGovernance:CacheEnabled"] = "false",
            ["AgentGovernance:CacheMaxEntries"] = "10",
            ["AgentGovernance:AuditWalPath"] = "/var/lib/app/audit.wal",
            ["AgentGovernance:AuditBatchSize"] = "7",
            ["AgentGovernance:AuditFlushIntervalSeconds"] = "2",
            ["AgentGovernance:GrpcRetrySeconds"] = "9",
        }));
        using var provider = services.BuildServiceProvider();

        var options = provider.GetRequiredService<IOptions<AgentGovernanceOptions>>().Value;

        Assert.Equal(new Uri("https://gateway.example:8443"), options.GatewayUrl);
        Assert.Equal(("agk_x", "agent_1", "elevated", false, 1.5), (options.ApiKey, options.AgentId, options.DefaultTrustTier, options.ThrowOnDenied, options.TimeoutSeconds));
        Assert.Equal(FailureMode.FailOpen, options.FailureMode);
        var file = options.Plugins["fileplugin"];
        Assert.Equal(("restricted", 0.5, true), (file.TrustTier, file.TimeoutSeconds, file.ThrowOnDenied));
        Assert.Equal("finance", options.Context["department"]);
        Assert.Equal(("pdp.example:9000", false, 10), (options.GrpcAddress, options.CacheEnabled, options.CacheMaxEntries));
        Assert.Equal(("/var/lib/app/audit.wal", 7, 2.0, 9.0), (options.AuditWalPath, options.AuditBatchSize, options.AuditFlushIntervalSeconds, options.GrpcRetrySeconds));
    }

    [Fact]
    public void Unusable_options_are_refused_with_every_problem_named_when_the_client_is_resolved()
    {
        var services = new ServiceCollection().AddAgentGovernanceClient(Configuration(new()
        {
            ["AgentGovernance:GatewayUrl"] = "ftp://gateway.example",
            ["AgentGovernance:AgentId"] = "agent_1",
            ["AgentGovernance:TimeoutSeconds"] = "0",
            ["AgentGovernance:Plugins:SlowPlugin:TimeoutSeconds"] = "-1",
            ["AgentGovernance:AuditBatchSize"] = "0",
        }));
        using var provider = services.BuildServiceProvider();

        var refused = Assert.Throws<OptionsValidationException>(() => provider.GetRequiredService<IGovernanceClient>());

        Assert.Equal(
            ["GatewayUrl must be an absolute http:// or https:// URL", "ApiKey is required", "TimeoutSeconds must be a positive number of seconds", "Plugins:SlowPlugin:TimeoutSeconds must be a positive number of seconds", "AuditBatchSize must be at least 1"],
            refused.Failures);
    }

    [Fact]
    public void An_unknown_failure_mode_is_refused_when_bound()
    {
        var services = new ServiceCollection().AddAgentGovernanceClient(Configuration(new() { ["AgentGovernance:FailureMode"] = "fail-sometimes" }));
        using var provider = services.BuildServiceProvider();

        var refused = Assert.Throws<InvalidOperationException>(() => provider.GetRequiredService<IOptions<AgentGovernanceOptions>>().Value);

        Assert.Contains("fail-sometimes", refused.InnerException?.Message ?? refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_timeout_a_timer_cannot_hold_is_refused()
    {
        var options = new AgentGovernanceOptions { GatewayUrl = new Uri("http://g"), ApiKey = "k", AgentId = "a", TimeoutSeconds = 60 * 86_400 };

        Assert.Equal(["TimeoutSeconds must be at most 2147483.647 seconds"], options.Validate());
        Assert.Throws<ArgumentException>(() => new GovernanceClient(options));
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(3601)]
    [InlineData(double.NaN)]
    public void ApprovalWaitSeconds_is_bounded_from_0_to_3600(double seconds)
    {
        var options = new AgentGovernanceOptions { GatewayUrl = new Uri("http://g"), ApiKey = "k", AgentId = "a", ApprovalWaitSeconds = seconds };

        Assert.Equal(["ApprovalWaitSeconds must be between 0 and 3600 seconds"], options.Validate());
        Assert.Equal(300, new AgentGovernanceOptions().ApprovalWaitSeconds);
        Assert.Empty(new AgentGovernanceOptions { GatewayUrl = new Uri("http://g"), ApiKey = "k", AgentId = "a", ApprovalWaitSeconds = 0 }.Validate());
    }
}
