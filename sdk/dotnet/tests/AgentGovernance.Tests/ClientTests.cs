using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>CheckAsync, AuditAsync and GuardAsync against a real gateway: allow, deny (thrown and soft), overrides, enrichment, refusals.</summary>
[Collection(GatewayTestGroup.Name)]
public sealed class ClientTests(GatewayFixture fixture) : IAsyncLifetime
{
    private readonly Clients clients = new();
    private string agentId = "";

    public async Task InitializeAsync() => agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet", "verified", "finance");

    public async Task DisposeAsync() => await clients.DisposeAsync();

    private GovernanceClient Client(Action<AgentGovernanceOptions>? configure = null)
    {
        var options = clients.OptionsFor(fixture, agentId);
        configure?.Invoke(options);
        return clients.Create(options);
    }

    private static Dictionary<string, object?> Args(string name, object? value) => new() { [name] = value };

    [Fact]
    public async Task An_allowed_call_answers_with_the_deciding_policy_over_grpc()
    {
        var decision = await Client().CheckAsync("FilePlugin", "ReadFile", Args("path", "/tmp/notes.txt"));

        Assert.True(decision.IsAllowed);
        Assert.Equal("block-sensitive-files", decision.Policy);
        Assert.Equal(DecisionSource.Grpc, decision.Source);
        Assert.StartsWith("aud_", decision.DecisionId);
        Assert.True(decision.PolicyVersion > 0);
        Assert.True(decision.Enforced);
    }

    [Fact]
    public async Task A_denial_throws_with_its_reason_policy_and_rule()
    {
        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => Client().CheckAsync("FilePlugin", "ReadFile", Args("path", "/etc/passwd")));

        Assert.Equal("block-sensitive-files", denied.Policy);
        Assert.Equal("system-paths", denied.Rule);
        Assert.Equal("Access to system files blocked", denied.Reason);
        Assert.Equal(("FilePlugin", "ReadFile"), (denied.PluginName, denied.FunctionName));
        Assert.Contains("Access to system files blocked", denied.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task With_ThrowOnDenied_false_a_denial_is_a_soft_answer()
    {
        var decision = await Client(options => options.ThrowOnDenied = false).CheckAsync("FilePlugin", "ReadFile", Args("path", "/etc/passwd"));

        Assert.False(decision.IsAllowed);
        Assert.Equal("deny", decision.Decision);
        Assert.Equal("Access to system files blocked", decision.Reason);
    }

    [Fact]
    public async Task Per_plugin_overrides_set_ThrowOnDenied_and_the_tier_hint_of_that_plugin_only()
    {
        await fixture.Gateway.PutPolicyAsync("dotnet-adapter-tier", """
            name: dotnet-adapter-tier
            match: { plugin: DotnetTierPlugin }
            rules:
              - name: restricted-adapters
                condition: context.adapter_trust_tier == "restricted"
                action: deny
                reason: Restricted adapters may not
            """);
        var client = Client(options =>
        {
            options.Plugins["FilePlugin"] = new PluginGovernanceOptions { ThrowOnDenied = false };
            options.Plugins["DotnetTierPlugin"] = new PluginGovernanceOptions { TrustTier = "restricted" };
        });

        Assert.False((await client.CheckAsync("FilePlugin", "ReadFile", Args("path", "/etc/passwd"))).IsAllowed);
        var denied = await Assert.ThrowsAsync<PolicyDeniedException>(() => client.CheckAsync("DotnetTierPlugin", "Run"));
        Assert.Equal("dotnet-adapter-tier", denied.Policy);
        Assert.True((await Client().CheckAsync("DotnetTierPlugin", "Run")).IsAllowed);
    }

    [Fact]
    public async Task Context_from_the_options_and_the_call_reaches_policy_conditions()
    {
        var fromOptions = Client(options =>
        {
            options.ThrowOnDenied = false;
            options.Context["data_class"] = "pii";
        });
        Assert.Equal("deny", (await fromOptions.CheckAsync("CrmPlugin", "GetCustomer", Args("id", "cus_1"))).Decision);
        // The call's own context wins over the options'.
        Assert.Equal("allow", (await fromOptions.CheckAsync("CrmPlugin", "GetCustomer", Args("id", "cus_1"), Args("data_class", "public"))).Decision);
        var perCall = await Client(options => options.ThrowOnDenied = false).CheckAsync("CrmPlugin", "GetCustomer", Args("id", "cus_1"), Args("data_class", "pii"));
        Assert.Equal(("deny", "pii-guard"), (perCall.Decision, perCall.Policy));
    }

    [Fact]
    public async Task An_unknown_agent_is_a_refusal_not_a_denial_whatever_ThrowOnDenied_says()
    {
        var client = Client(options =>
        {
            options.AgentId = "agent_000000000000000000000000";
            options.ThrowOnDenied = false;
            options.FailureMode = FailureMode.FailOpen;
        });

        var refused = await Assert.ThrowsAsync<GatewayRejectedException>(() => client.CheckAsync("FilePlugin", "ReadFile", Args("path", "/tmp/a")));
        Assert.Equal(GatewayRejection.NotFound, refused.Code);
    }

    [Theory]
    [InlineData("grpc")]
    [InlineData("http")]
    public async Task A_tripped_rate_limit_is_a_refusal_with_the_time_until_a_retry_can_pass(string transport)
    {
        var plugin = $"DotnetLimited{transport}Plugin";
        await fixture.Gateway.PutPolicyAsync($"dotnet-limit-{transport}", $"""
            name: dotnet-limit-{transport}
            match: {"{"} plugin: {plugin} {"}"}
            rules:
              - condition: rate_limit(per_agent, 1, 1m)
                action: deny
                reason: One a minute
            """);
        var client = Client(options =>
        {
            options.ThrowOnDenied = false;
            if (transport == "http") options.GrpcAddress = $"127.0.0.1:{GatewayProcess.FreePort()}";
        });
        Assert.Equal(transport == "grpc" ? DecisionSource.Grpc : DecisionSource.Http, (await client.CheckAsync(plugin, "Run")).Source);
        var ran = false;

        var refused = await Assert.ThrowsAsync<GatewayRejectedException>(() => client.GuardAsync(plugin, "Run", null, _ => Task.FromResult(ran = true)));

        Assert.Equal(GatewayRejection.ResourceExhausted, refused.Code);
        Assert.Contains("One a minute", refused.Message, StringComparison.Ordinal);
        Assert.True(refused.RetryAfter > TimeSpan.Zero);
        Assert.False(ran);
    }

    [Fact]
    public async Task A_non_finite_argument_is_refused_before_anything_is_sent()
    {
        var refused = await Assert.ThrowsAsync<GatewayRejectedException>(() => Client().CheckAsync("PaymentPlugin", "Refund", Args("amount", double.PositiveInfinity)));

        Assert.Equal(GatewayRejection.InvalidArgument, refused.Code);
        Assert.Contains("amount", refused.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Guard_runs_an_allowed_call_and_audits_its_duration_and_a_summary()
    {
        var client = Client();

        var result = await client.GuardAsync("FilePlugin", "ReadFile", Args("path", "/tmp/a.txt"), async token =>
        {
            await Task.Delay(20, token);
            return "twelve chars";
        });

        Assert.Equal("twelve chars", result.Value);
        Assert.True(await client.FlushAuditAsync());
        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal("FilePlugin.ReadFile", outcome.GetProperty("action").GetString());
        Assert.Equal("allow", outcome.GetProperty("decision").GetString());
        var details = outcome.GetProperty("details");
        Assert.Equal("returned string of 12 characters", details.GetProperty("resultSummary").GetString());
        Assert.True(details.GetProperty("durationMs").GetDouble() >= 15);
        Assert.Equal(result.Decision.DecisionId, details.GetProperty("decisionId").GetString());
    }

    [Fact]
    public async Task Guard_never_runs_a_denied_call()
    {
        var ran = new List<string>();

        await Assert.ThrowsAsync<PolicyDeniedException>(() => Client().GuardAsync("FilePlugin", "ReadFile", Args("path", "/etc/shadow"), _ => { ran.Add("strict"); return Task.FromResult(1); }));
        var soft = await Client(options => options.ThrowOnDenied = false).GuardAsync("FilePlugin", "ReadFile", Args("path", "/etc/shadow"), _ => { ran.Add("soft"); return Task.FromResult(1); });

        Assert.True(soft.IsDenied);
        Assert.Equal("block-sensitive-files", soft.Decision.Policy);
        Assert.Empty(ran);
    }

    [Fact]
    public async Task Guard_audits_a_call_that_throws_and_rethrows()
    {
        var client = Client();

        await Assert.ThrowsAsync<KeyNotFoundException>(() => client.GuardAsync<int>("WeatherPlugin", "Forecast", Args("city", "Oslo"), _ => throw new KeyNotFoundException("missing")));

        Assert.True(await client.FlushAuditAsync());
        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal("raised KeyNotFoundException", outcome.GetProperty("details").GetProperty("resultSummary").GetString());
    }

    [Fact]
    public async Task A_cancelled_check_is_cancelled_even_under_fail_open()
    {
        await using var stalled = new StalledServer();
        var client = Client(options =>
        {
            options.GatewayUrl = new Uri($"http://{stalled.Address}");
            options.GrpcAddress = stalled.Address;
            options.FailureMode = FailureMode.FailOpen;
            options.ThrowOnDenied = false;
        });
        using var cancel = new CancellationTokenSource(TimeSpan.FromMilliseconds(200));

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => client.CheckAsync("FilePlugin", "ReadFile", Args("path", "/tmp/a"), cancellationToken: cancel.Token));

        Assert.Equal(0, client.PendingAuditCount);
    }

    [Fact]
    public async Task An_audit_whose_arguments_the_gateway_would_refuse_as_too_large_is_recorded_without_them()
    {
        var client = Client();

        await client.AuditAsync(new AuditRecord { PluginName = "FilePlugin", FunctionName = "WriteFile", Allowed = true, Arguments = Args("content", new string('x', 2 * 1024 * 1024)), ResultSummary = "wrote 2 MiB" });

        Assert.True(await client.FlushAuditAsync());
        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal("wrote 2 MiB", outcome.GetProperty("details").GetProperty("resultSummary").GetString());
        Assert.False(outcome.GetProperty("input").TryGetProperty("args", out var args) && args.ValueKind == System.Text.Json.JsonValueKind.Object && args.TryGetProperty("content", out _));
    }

    [Fact]
    public async Task An_audit_with_a_NaN_duration_and_infinite_arguments_is_recorded_rather_than_lost()
    {
        var client = Client();

        await client.AuditAsync(new AuditRecord
        {
            PluginName = "MathPlugin",
            FunctionName = "Divide",
            Allowed = true,
            Duration = TimeSpan.FromMilliseconds(-5),
            Arguments = new Dictionary<string, object?> { ["ratio"] = double.PositiveInfinity, ["rest"] = new[] { double.NaN, 1 } },
            ResultSummary = new string('x', 5000),
        });

        Assert.True(await client.FlushAuditAsync());
        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        Assert.Equal(0, outcome.GetProperty("details").GetProperty("durationMs").GetDouble());
        Assert.Equal(2048, outcome.GetProperty("details").GetProperty("resultSummary").GetString()!.Length);
        Assert.Equal("""{"ratio":"Infinity","rest":["NaN",1]}""", outcome.GetProperty("input").GetProperty("args").GetRawText());
    }
}
