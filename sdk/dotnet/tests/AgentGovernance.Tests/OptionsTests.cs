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
        Assert.Equal(TimeSpan.FromSeconds(5), options.Timeout);
        Assert.Equal((TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(300)), (options.AuditFlushInterval, options.GrpcRetryInterval, options.ApprovalWait));
        Assert.Null(options.SessionId);
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
            ["AgentGovernance:Timeout"] = "00:00:01.5",
            ["AgentGovernance:SessionId"] = "conversation-7",
            ["AgentGovernance:FailureMode"] = "fail-open",
            ["AgentGovernance:Plugins:FilePlugin:TrustTier"] = "restricted",
            ["AgentGovernance:Plugins:FilePlugin:Timeout"] = "00:00:00.5",
            ["AgentGovernance:Plugins:FilePlugin:ThrowOnDenied"] = "true",
            ["AgentGovernance:Context:department"] = "finance",
            ["AgentGovernance:GrpcAddress"] = "pdp.example:9000",
            ["AgentGovernance:CacheEnabled"] = "false",
            ["AgentGovernance:CacheMaxEntries"] = "10",
            ["AgentGovernance:AuditWalPath"] = "/var/lib/app/audit.wal",
            ["AgentGovernance:AuditBatchSize"] = "7",
            ["AgentGovernance:AuditFlushInterval"] = "00:00:02",
            ["AgentGovernance:GrpcRetryInterval"] = "00:00:09",
            ["AgentGovernance:ApprovalWait"] = "00:01:00",
        }));
        using var provider = services.BuildServiceProvider();

        var options = provider.GetRequiredService<IOptions<AgentGovernanceOptions>>().Value;

        Assert.Equal(new Uri("https://gateway.example:8443"), options.GatewayUrl);
        Assert.Equal(("agk_x", "agent_1", "elevated", false, TimeSpan.FromSeconds(1.5), "conversation-7"), (options.ApiKey, options.AgentId, options.DefaultTrustTier, options.ThrowOnDenied, options.Timeout, options.SessionId));
        Assert.Equal(FailureMode.FailOpen, options.FailureMode);
        var file = options.Plugins["fileplugin"];
        Assert.Equal(("restricted", TimeSpan.FromSeconds(0.5), true), (file.TrustTier, file.Timeout, file.ThrowOnDenied));
        Assert.Equal("finance", options.Context["department"]);
        Assert.Equal(("pdp.example:9000", false, 10), (options.GrpcAddress, options.CacheEnabled, options.CacheMaxEntries));
        Assert.Equal(("/var/lib/app/audit.wal", 7, TimeSpan.FromSeconds(2), TimeSpan.FromSeconds(9), TimeSpan.FromMinutes(1)), (options.AuditWalPath, options.AuditBatchSize, options.AuditFlushInterval, options.GrpcRetryInterval, options.ApprovalWait));
    }

    [Fact]
    public void The_seconds_options_of_earlier_versions_still_bind_as_the_durations()
    {
        var services = new ServiceCollection().AddAgentGovernanceClient(Configuration(new()
        {
            ["AgentGovernance:GatewayUrl"] = "https://gateway.example:8443",
            ["AgentGovernance:ApiKey"] = "agk_x",
            ["AgentGovernance:AgentId"] = "agent_1",
            ["AgentGovernance:TimeoutSeconds"] = "1.5",
            ["AgentGovernance:Plugins:FilePlugin:TimeoutSeconds"] = "0.5",
            ["AgentGovernance:AuditFlushIntervalSeconds"] = "2",
            ["AgentGovernance:GrpcRetrySeconds"] = "9",
            ["AgentGovernance:ApprovalWaitSeconds"] = "60",
        }));
        using var provider = services.BuildServiceProvider();

        var options = provider.GetRequiredService<IOptions<AgentGovernanceOptions>>().Value;

        Assert.Equal(
            (TimeSpan.FromSeconds(1.5), TimeSpan.FromSeconds(0.5), TimeSpan.FromSeconds(2), TimeSpan.FromSeconds(9), TimeSpan.FromMinutes(1)),
            (options.Timeout, options.Plugins["FilePlugin"].Timeout, options.AuditFlushInterval, options.GrpcRetryInterval, options.ApprovalWait));
    }

    [Fact]
    public void Unusable_options_are_refused_with_every_problem_named_when_the_client_is_resolved()
    {
        var services = new ServiceCollection().AddAgentGovernanceClient(Configuration(new()
        {
            ["AgentGovernance:GatewayUrl"] = "ftp://gateway.example",
            ["AgentGovernance:AgentId"] = "agent_1",
            ["AgentGovernance:Timeout"] = "00:00:00",
            ["AgentGovernance:Plugins:SlowPlugin:TimeoutSeconds"] = "-1",
            ["AgentGovernance:AuditBatchSize"] = "0",
            ["AgentGovernance:SessionId"] = "two words",
        }));
        using var provider = services.BuildServiceProvider();

        var refused = Assert.Throws<OptionsValidationException>(() => provider.GetRequiredService<IGovernanceClient>());

        Assert.Equal(
            ["GatewayUrl must be an absolute http:// or https:// URL", "ApiKey is required", "Timeout must be more than 0", "SessionId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -", "Plugins:SlowPlugin:Timeout must be more than 0", "AuditBatchSize must be at least 1"],
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
        var options = new AgentGovernanceOptions { GatewayUrl = new Uri("http://g"), ApiKey = "k", AgentId = "a", Timeout = TimeSpan.FromDays(60) };

        Assert.Equal(["Timeout must be at most 2147483.647 seconds"], options.Validate());
        Assert.Throws<ArgumentException>(() => new GovernanceClient(options));
    }

    [Theory]
    [InlineData(-1)]
    [InlineData(3601)]
    [InlineData(double.NaN)]
    public void ApprovalWait_is_bounded_from_0_to_3600_seconds(double seconds)
    {
        var options = new AgentGovernanceOptions { GatewayUrl = new Uri("http://g"), ApiKey = "k", AgentId = "a" };
#pragma warning disable CS0618 // The seconds of earlier versions: NaN cannot be a TimeSpan.
        options.ApprovalWaitSeconds = seconds;
#pragma warning restore CS0618

        Assert.Equal(["ApprovalWait must be between 0 and 3600 seconds"], options.Validate());
        Assert.Empty(new AgentGovernanceOptions { GatewayUrl = new Uri("http://g"), ApiKey = "k", AgentId = "a", ApprovalWait = TimeSpan.Zero }.Validate());
    }
}
