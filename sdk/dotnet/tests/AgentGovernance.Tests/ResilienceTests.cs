using System.Diagnostics;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>When the gateway is slow or half-reachable: timeouts, the HTTP fallback, and the decision cache with its invalidation by the Subscribe stream.</summary>
[Collection(GatewayTestGroup.Name)]
public sealed class ResilienceTests(GatewayFixture fixture) : IAsyncLifetime
{
    private readonly Clients clients = new();
    private string agentId = "";

    public async Task InitializeAsync() => agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-resilience", "verified", "finance");

    public async Task DisposeAsync() => await clients.DisposeAsync();

    private GovernanceClient Client(Action<AgentGovernanceOptions>? configure = null)
    {
        var options = clients.OptionsFor(fixture, agentId);
        configure?.Invoke(options);
        return clients.Create(options);
    }

    private static Dictionary<string, object?> Path(string path) => new() { ["path"] = path };

    [Fact]
    public async Task A_stalled_gateway_times_out_with_an_error_by_default()
    {
        await using var stalled = new StalledServer();
        var client = Client(options =>
        {
            options.GatewayUrl = new Uri($"http://{stalled.Address}");
            options.GrpcAddress = stalled.Address;
            options.Timeout = TimeSpan.FromSeconds(0.5);
        });
        var started = Stopwatch.StartNew();

        await Assert.ThrowsAsync<GatewayTimeoutException>(() => client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/a")));

        Assert.InRange(started.Elapsed.TotalSeconds, 0.45, 3);
    }

    [Fact]
    public async Task A_stalled_gateway_denies_under_fail_closed_when_ThrowOnDenied_is_false_and_says_so_in_the_audit()
    {
        await using var stalled = new StalledServer();
        var client = Client(options =>
        {
            options.GatewayUrl = new Uri($"http://{stalled.Address}");
            options.GrpcAddress = stalled.Address;
            options.Timeout = TimeSpan.FromSeconds(30);
            options.Plugins["FilePlugin"] = new PluginGovernanceOptions { Timeout = TimeSpan.FromSeconds(0.3), ThrowOnDenied = false };
        });
        var started = Stopwatch.StartNew();
        var ran = false;

        var guarded = await client.GuardAsync("FilePlugin", "ReadFile", Path("/tmp/a"), _ =>
        {
            ran = true;
            return Task.FromResult("ran");
        });
        var decision = await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/a"));

        Assert.False(ran);
        Assert.Null(guarded.Value);
        Assert.Equal((false, DecisionSource.Timeout), (guarded.Decision.IsAllowed, guarded.Decision.Source));
        Assert.Equal((false, DecisionSource.Timeout), (decision.IsAllowed, decision.Source));
        Assert.StartsWith("The check of FilePlugin.ReadFile timed out: ", decision.Reason, StringComparison.Ordinal);
        Assert.EndsWith("no answer within 0.3 s", decision.Reason, StringComparison.Ordinal);
        Assert.True(started.Elapsed < TimeSpan.FromSeconds(5));
        Assert.Equal(2, client.PendingAuditCount);
        // Another plugin keeps the client-wide timeout and ThrowOnDenied.
        var other = client.CheckAsync("OtherPlugin", "Run");
        Assert.NotSame(other, await Task.WhenAny(other, Task.Delay(1500)));
    }

    [Fact]
    public async Task With_the_grpc_port_closed_checks_fall_back_to_http()
    {
        var client = Client(options =>
        {
            options.GrpcAddress = $"127.0.0.1:{GatewayProcess.FreePort()}";
            options.ThrowOnDenied = false;
        });

        var allowed = await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/a"));
        var denied = await client.CheckAsync("FilePlugin", "ReadFile", Path("/etc/passwd"));

        Assert.Equal(("allow", DecisionSource.Http, "block-sensitive-files"), (allowed.Decision, allowed.Source, allowed.Policy));
        Assert.Equal(("deny", DecisionSource.Http, "system-paths"), (denied.Decision, denied.Source, denied.Rule));
        Assert.StartsWith("aud_", denied.DecisionId);
    }

    [Fact]
    public async Task A_cached_decision_is_answered_without_the_gateway()
    {
        var client = Client();

        var first = await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/cached"));
        var cached = await WaitForCacheAsync(() => client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/cached")));

        Assert.True(first.Cacheable);
        Assert.True(first.CacheTtl > TimeSpan.Zero);
        Assert.Equal(DecisionSource.Grpc, first.Source);
        Assert.Equal((first.Policy, first.PolicyVersion), (cached.Policy, cached.PolicyVersion));
        // Another question is not the cached one.
        Assert.Equal(DecisionSource.Grpc, (await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/other"))).Source);
    }

    [Fact]
    public async Task A_revocation_ends_a_cached_decision_within_a_second()
    {
        var client = Client();
        Task<PolicyDecision> Ask() => client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/revoked"));
        await WaitForCacheAsync(Ask);

        await fixture.Gateway.RevokeAgentAsync(agentId);
        var revokedAt = Stopwatch.StartNew();
        GatewayRejectedException? refused = null;
        while (refused is null)
        {
            try
            {
                Assert.Equal(DecisionSource.Cache, (await Ask()).Source);
            }
            catch (GatewayRejectedException error)
            {
                refused = error;
            }
            Assert.True(revokedAt.Elapsed < TimeSpan.FromSeconds(1), "the cache still answered a second after the revocation");
            await Task.Delay(10);
        }

        Assert.Equal(GatewayRejection.PermissionDenied, refused.Code);
    }

    [Fact]
    public async Task A_policy_change_ends_cached_decisions_within_a_second()
    {
        var client = Client(options => options.ThrowOnDenied = false);
        Task<PolicyDecision> Ask() => client.CheckAsync("DotnetNotesPlugin", "Append", new Dictionary<string, object?> { ["text"] = "x" });
        Assert.True((await Ask()).IsAllowed);
        await WaitForCacheAsync(Ask);

        await fixture.Gateway.PutPolicyAsync("dotnet-notes-closed", """
            name: dotnet-notes-closed
            match: { plugin: DotnetNotesPlugin }
            rules:
              - condition: "true"
                action: deny
                reason: Notes are closed
            """);
        try
        {
            var changedAt = Stopwatch.StartNew();
            PolicyDecision decision;
            while ((decision = await Ask()).Source == DecisionSource.Cache)
            {
                Assert.True(changedAt.Elapsed < TimeSpan.FromSeconds(1), "the cache still answered a second after the change");
                await Task.Delay(10);
            }
            Assert.Equal(("deny", "dotnet-notes-closed"), (decision.Decision, decision.Policy));
        }
        finally
        {
            await fixture.Gateway.DeletePolicyAsync("dotnet-notes-closed");
        }
    }

    [Fact]
    public async Task An_answer_a_rate_limit_took_part_in_is_asked_every_time()
    {
        var client = Client();
        var first = await client.CheckAsync("SearchPlugin", "Query", new Dictionary<string, object?> { ["q"] = "a" });
        await Task.Delay(300);

        var sources = new List<DecisionSource>();
        for (var i = 0; i < 3; i++) sources.Add((await client.CheckAsync("SearchPlugin", "Query", new Dictionary<string, object?> { ["q"] = "a" })).Source);

        Assert.False(first.Cacheable);
        Assert.All(sources, source => Assert.Equal(DecisionSource.Grpc, source));
    }

    [Fact]
    public async Task With_the_cache_off_every_check_asks_the_gateway()
    {
        var client = Client(options => options.CacheEnabled = false);
        var sources = new List<DecisionSource>();
        for (var i = 0; i < 4; i++)
        {
            sources.Add((await client.CheckAsync("FilePlugin", "ReadFile", Path("/tmp/uncached"))).Source);
            await Task.Delay(100);
        }

        Assert.All(sources, source => Assert.Equal(DecisionSource.Grpc, source));
    }

    /// <summary>Checks until an answer comes from the cache (the Subscribe stream is open).</summary>
    internal static async Task<PolicyDecision> WaitForCacheAsync(Func<Task<PolicyDecision>> check)
    {
        var deadline = Stopwatch.StartNew();
        PolicyDecision decision;
        while ((decision = await check()).Source != DecisionSource.Cache)
        {
            Assert.True(deadline.Elapsed < TimeSpan.FromSeconds(5), "no answer ever came from the cache");
            await Task.Delay(20);
        }
        return decision;
    }
}
