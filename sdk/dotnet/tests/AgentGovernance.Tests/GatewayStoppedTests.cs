using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// Both failure modes against a gateway that was stopped (its own process, not the shared one):
/// fail-closed refuses the call, fail-open allows it and its failure-mode audit event reaches
/// the gateway once it is started again.
/// </summary>
public sealed class GatewayStoppedTests : IAsyncLifetime
{
    private readonly Clients clients = new();
    private GatewayProcess gateway = null!;
    private string apiKey = "";
    private string agentId = "";

    public async Task InitializeAsync()
    {
        gateway = await GatewayProcess.StartAsync();
        apiKey = await gateway.CreateApiKeyAsync();
        agentId = await gateway.CreateAgentAsync("sdk-dotnet-stopped");
    }

    public async Task DisposeAsync()
    {
        await clients.DisposeAsync();
        await gateway.DisposeAsync();
    }

    private GovernanceClient Client(FailureMode mode) => clients.Create(new AgentGovernanceOptions
    {
        GatewayUrl = gateway.Url,
        GrpcAddress = gateway.GrpcAddress,
        ApiKey = apiKey,
        AgentId = agentId,
        FailureMode = mode,
        // A stopped gateway refuses connections at once; the timeout only bounds the checks made
        // while it runs, which a loaded machine may slow past a short one (and a timed-out check
        // under fail-open is a decision of the client's own, with an audit event of its own).
        Timeout = TimeSpan.FromSeconds(30),
        AuditFlushInterval = TimeSpan.FromSeconds(0.1),
    });

    [Fact]
    public async Task Fail_closed_refuses_and_fail_open_allows_with_an_audit_event_that_arrives_after_the_restart()
    {
        var closed = Client(FailureMode.FailClosed);
        var open = Client(FailureMode.FailOpen);
        var before = await open.CheckAsync("FilePlugin", "ReadFile", new Dictionary<string, object?> { ["path"] = "/tmp/a" });
        Assert.Equal((true, DecisionSource.Grpc), (before.IsAllowed, before.Source));
        // Whatever the client queued so far has reached the gateway: what is pending after the stop is the stop's.
        Assert.True(await open.FlushAuditAsync());

        await gateway.StopAsync();
        var ran = false;
        await Assert.ThrowsAsync<GatewayUnavailableException>(() => closed.GuardAsync("FilePlugin", "ReadFile", new Dictionary<string, object?> { ["path"] = "/tmp/a" }, _ => Task.FromResult(ran = true)));
        var allowed = await open.CheckAsync("FilePlugin", "ReadFile", new Dictionary<string, object?> { ["path"] = "/etc/passwd" });

        Assert.False(ran);
        Assert.Equal(0, closed.PendingAuditCount);
        Assert.Equal((true, DecisionSource.FailOpen, false), (allowed.IsAllowed, allowed.Source, allowed.Enforced));
        Assert.Equal(1, open.PendingAuditCount);
        Assert.False(await open.FlushAuditAsync());

        await gateway.StartAgainAsync();
        Assert.True(await open.FlushAuditAsync());
        Assert.Equal(0, open.PendingAuditCount);
        // The one decision the client made without the gateway is on the trail once, as fail-open.
        var outcome = Assert.Single(await gateway.WaitForOutcomesAsync(agentId, 1, TimeSpan.FromSeconds(40)), FailOpen);
        Assert.Equal(("FilePlugin.ReadFile", "allow"), (outcome.GetProperty("action").GetString(), outcome.GetProperty("decision").GetString()));
    }

    private static bool FailOpen(System.Text.Json.JsonElement outcome) =>
        outcome.GetProperty("details") is { ValueKind: System.Text.Json.JsonValueKind.Object } details
        && details.TryGetProperty("resultSummary", out var summary)
        && summary.GetString()!.StartsWith("fail-open: allowed without a gateway decision", StringComparison.Ordinal);
}
