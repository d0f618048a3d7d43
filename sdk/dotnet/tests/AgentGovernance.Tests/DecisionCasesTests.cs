using AgentGovernance.Tests.Support;

namespace AgentGovernance.Tests;

/// <summary>
/// The decision cases every SDK runs (sdk/fixtures/decision-cases.json), through this SDK over
/// gRPC and over the HTTP fallback: the same answers as the fixture, the Python and the TypeScript SDK.
/// </summary>
[Collection(GatewayTestGroup.Name)]
public sealed class DecisionCasesTests(GatewayFixture fixture) : IAsyncLifetime
{
    private static readonly DecisionCases Shared = DecisionCases.Load(RepositoryRoot.Find());
    private readonly Clients clients = new();
    private readonly Dictionary<string, string> agents = [];

    public static TheoryData<string, string> CasesOnBothTransports()
    {
        var data = new TheoryData<string, string>();
        foreach (var shared in Shared.Cases)
        {
            data.Add(shared.Name, "grpc");
            data.Add(shared.Name, "http");
        }
        return data;
    }

    public async Task InitializeAsync()
    {
        foreach (var agent in Shared.Agents) agents[agent.Name] = await fixture.Gateway.CreateAgentAsync(agent.Name, agent.TrustTier, agent.Tags);
    }

    public async Task DisposeAsync() => await clients.DisposeAsync();

    [Fact]
    public void The_gateway_runs_the_fixture_policies()
    {
        Assert.Equal(File.ReadAllText(Path.Combine(RepositoryRoot.Find(), "sdk", "fixtures", "policies.yaml")), Shared.Policies);
        Assert.NotEmpty(Shared.Cases);
    }

    [Theory]
    [MemberData(nameof(CasesOnBothTransports))]
    public async Task A_shared_decision_case_gets_the_fixture_answer(string name, string transport)
    {
        var shared = Shared.Cases.Single(each => each.Name == name);
        var options = clients.OptionsFor(fixture, agents[shared.Agent]);
        options.ThrowOnDenied = false;
        if (transport == "http") options.GrpcAddress = $"127.0.0.1:{GatewayProcess.FreePort()}";

        var decision = await clients.Create(options).CheckAsync(shared.Plugin, shared.Function, shared.Args, shared.Context);

        Assert.Equal((shared.ExpectDecision, shared.ExpectPolicy), (decision.Decision, decision.Policy));
        Assert.Equal(transport == "grpc" ? DecisionSource.Grpc : DecisionSource.Http, decision.Source);
    }
}
