using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// Every decision the client applies reaches the gateway's trail: cached ones (as decisions
/// naming the one they reused) and its own when the gateway did not answer, sent in real
/// batches (<c>POST /v1/audit</c> with <c>{"events": [...]}</c>), each stamped with when its
/// call happened. The shared cases of sdk/fixtures/decision-cases.json (cachedDenials,
/// timeouts) as the Python and TypeScript SDKs run them.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class AuditTrailTests(GatewayFixture fixture) : IAsyncLifetime
{
    private static readonly DecisionCases Shared = DecisionCases.Load(RepositoryRoot.Find());
    private readonly Clients clients = new();

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync() => await clients.DisposeAsync();

    public static TheoryData<string> CachedCases() => [.. Shared.CachedDenials.Select(shared => shared.Check.Name)];

    public static TheoryData<string> TimeoutCases() => [.. Shared.Timeouts.Select(shared => shared.Check.Name)];

    private async Task<string> AgentLikeAsync(string fixtureAgent)
    {
        var agent = Shared.Agents.Single(each => each.Name == fixtureAgent);
        return await fixture.Gateway.CreateAgentAsync($"sdk-dotnet-trail-{agent.Name}", agent.TrustTier, agent.Tags);
    }

    [Theory]
    [MemberData(nameof(CachedCases))]
    public async Task Every_application_of_a_cached_decision_is_on_the_trail_naming_the_decision_it_reused(string name)
    {
        var shared = Shared.CachedDenials.Single(each => each.Check.Name == name);
        var check = shared.Check;
        var agentId = await AgentLikeAsync(check.Agent);
        var options = clients.OptionsFor(fixture, agentId);
        options.ThrowOnDenied = false;
        var client = clients.Create(options);
        // Another question first, until the cache is live (its Subscribe stream open).
        await ResilienceTests.WaitForCacheAsync(() => client.CheckAsync(check.Plugin, "WarmUp", new Dictionary<string, object?> { ["path"] = "/tmp/warm" }));

        var decisions = new List<PolicyDecision>();
        for (var call = 0; call < shared.Calls; call++) decisions.Add(await client.CheckAsync(check.Plugin, check.Function, check.Args, check.Context));
        Assert.True(await client.FlushAuditAsync());

        Assert.All(decisions, decision => Assert.Equal((check.ExpectDecision, check.ExpectPolicy), (decision.Decision, decision.Policy)));
        Assert.Equal(shared.FromGateway, decisions.Count(decision => decision.Source != DecisionSource.Cache));
        Assert.Equal(shared.FromCache, decisions.Count(decision => decision.Source == DecisionSource.Cache));
        var trail = await fixture.Gateway.WaitForDecisionsAsync(agentId, $"{check.Plugin}.{check.Function}", shared.DecisionEntries);
        Assert.Equal(shared.DecisionEntries, trail.Count);
        Assert.All(trail, entry => Assert.Equal(check.ExpectDecision, entry.GetProperty("decision").GetString()));
        var cached = trail.Where(entry => entry.GetProperty("details") is { ValueKind: JsonValueKind.Object } details && details.TryGetProperty("cached", out var flag) && flag.GetBoolean()).ToList();
        Assert.Equal(shared.CachedEntries, cached.Count);
        Assert.All(cached, entry => Assert.Equal(decisions[0].DecisionId, entry.GetProperty("details").GetProperty("decisionId").GetString()));
        Assert.All(cached, entry => Assert.Equal(check.ExpectPolicy, entry.GetProperty("policyName").GetString()));
    }

    [Theory]
    [MemberData(nameof(TimeoutCases))]
    public async Task A_check_that_times_out_runs_the_call_only_under_fail_open_whatever_ThrowOnDenied_says(string name)
    {
        var shared = Shared.Timeouts.Single(each => each.Check.Name == name);
        var check = shared.Check;
        await using var stalled = new StalledServer();
        var options = clients.OptionsFor(fixture, await AgentLikeAsync(check.Agent));
        options.GatewayUrl = new Uri($"http://{stalled.Address}");
        options.GrpcAddress = stalled.Address;
        options.Timeout = TimeSpan.FromSeconds(shared.TimeoutSeconds);
        options.ThrowOnDenied = shared.ThrowOnDenied;
        options.FailureMode = shared.FailureMode == "fail-open" ? FailureMode.FailOpen : FailureMode.FailClosed;
        options.AuditFlushInterval = TimeSpan.FromSeconds(3600);
        var client = clients.Create(options);
        var ran = false;

        GuardResult<string>? guarded = null;
        Exception? thrown = null;
        try
        {
            guarded = await client.GuardAsync(check.Plugin, check.Function, check.Args, _ =>
            {
                ran = true;
                return Task.FromResult("ran");
            }, check.Context);
        }
        catch (AgentGovernanceException error)
        {
            thrown = error;
        }

        Assert.Equal(shared.Runs, ran);
        Assert.Equal(shared.Throws, thrown is not null);
        if (thrown is not null)
        {
            var timeout = Assert.IsType<GatewayTimeoutException>(thrown);
            Assert.Contains($"{check.Plugin}.{check.Function}", timeout.Message, StringComparison.Ordinal);
            Assert.Contains("no answer within 0.3 s", timeout.Message, StringComparison.Ordinal);
        }
        else
        {
            Assert.Equal((shared.Runs, DecisionSource.Timeout), (guarded!.Decision.IsAllowed, guarded.Decision.Source));
        }
        Assert.Equal(1, client.PendingAuditCount);
        var queued = JsonDocument.Parse(File.ReadLines(options.AuditWalPath!).Last()).RootElement.GetProperty("event");
        Assert.Equal(shared.AuditedDecision, queued.GetProperty("decision").GetString());
    }

    [Fact]
    public async Task Audit_events_go_to_the_gateway_in_batches()
    {
        var agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-batches");
        var options = clients.OptionsFor(fixture, agentId);
        options.AuditBatchSize = 100;
        options.AuditFlushInterval = TimeSpan.FromSeconds(3600);
        var client = clients.Create(options);
        for (var index = 0; index < 250; index++) await client.AuditAsync(Record($"batched {index}"));
        var before = await fixture.Gateway.AuditRequestsAsync();

        Assert.True(await client.FlushAuditAsync());

        Assert.Equal(3, await fixture.Gateway.AuditRequestsAsync() - before);
        Assert.Equal(250, (await fixture.Gateway.WaitForOutcomesAsync(agentId, 250)).Count);
    }

    [Fact]
    public async Task An_event_delivered_late_is_stamped_with_when_its_call_happened()
    {
        var agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-late");
        var walPath = Path.Combine(clients.WalDirectory, "late.wal");
        var offline = clients.OptionsFor(fixture, agentId).With(walPath);
        offline.GatewayUrl = new Uri($"http://127.0.0.1:{GatewayProcess.FreePort()}");
        offline.Timeout = TimeSpan.FromSeconds(0.2);
        var recordedAt = DateTimeOffset.UtcNow;
        await using (var client = new GovernanceClient(offline))
        {
            await client.AuditAsync(Record("made offline"));
        }
        await Task.Delay(1500);

        await using (var online = new GovernanceClient(clients.OptionsFor(fixture, agentId).With(walPath)))
        {
            Assert.True(await online.FlushAuditAsync());
        }

        var outcome = Assert.Single(await fixture.Gateway.WaitForOutcomesAsync(agentId, 1));
        var stamped = DateTimeOffset.Parse(outcome.GetProperty("timestamp").GetString()!, CultureInfo.InvariantCulture);
        Assert.InRange(stamped - recordedAt, TimeSpan.FromMilliseconds(-5), TimeSpan.FromMilliseconds(500));
    }

    [Fact]
    public async Task An_event_the_gateway_refuses_is_dropped_and_the_rest_of_its_batch_recorded()
    {
        var agentId = await fixture.Gateway.CreateAgentAsync("sdk-dotnet-refused");
        var options = clients.OptionsFor(fixture, agentId);
        options.AuditFlushInterval = TimeSpan.FromSeconds(3600);
        var client = clients.Create(options);
        await client.AuditAsync(Record("first"));
        await client.AuditAsync(Record("from the future") with { OccurredAt = DateTimeOffset.UtcNow.AddHours(1) });
        await client.AuditAsync(Record("third"));

        Assert.True(await client.FlushAuditAsync());

        var outcomes = await fixture.Gateway.WaitForOutcomesAsync(agentId, 2);
        Assert.Equal(["first", "third"], outcomes.Select(entry => entry.GetProperty("details").GetProperty("resultSummary").GetString()).Order());
        Assert.Equal(0, client.PendingAuditCount);
    }

    private static AuditRecord Record(string summary) => new() { PluginName = "FilePlugin", FunctionName = "ReadFile", Allowed = true, Duration = TimeSpan.FromMilliseconds(1), ResultSummary = summary };
}
