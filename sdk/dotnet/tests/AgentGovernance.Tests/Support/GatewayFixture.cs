namespace AgentGovernance.Tests.Support;

/// <summary>One gateway for every test of the collection (started once: it takes seconds), with one API key.</summary>
public sealed class GatewayFixture : IAsyncLifetime
{
    private GatewayProcess? gateway;

    public GatewayProcess Gateway => gateway ?? throw new InvalidOperationException("the gateway has not started");

    public string ApiKey { get; private set; } = "";

    public async Task InitializeAsync()
    {
        gateway = await GatewayProcess.StartAsync();
        ApiKey = await gateway.CreateApiKeyAsync();
    }

    public async Task DisposeAsync()
    {
        if (gateway is not null) await gateway.DisposeAsync();
    }
}

[CollectionDefinition(Name)]
public sealed class GatewayTestGroup : ICollectionFixture<GatewayFixture>
{
    public const string Name = "gateway";
}

/// <summary>Clients on a gateway, each with its own write-ahead file in a temporary folder, disposed after the test.</summary>
public sealed class Clients : IAsyncDisposable
{
    private readonly List<GovernanceClient> created = [];

    public Clients()
    {
        WalDirectory = Directory.CreateTempSubdirectory("agentgov-wal-").FullName;
    }

    public string WalDirectory { get; }

    /// <summary>Options for <paramref name="agentId"/> on <paramref name="fixture"/>'s gateway, audit sent every 50 ms.</summary>
    public AgentGovernanceOptions OptionsFor(GatewayFixture fixture, string agentId) => new()
    {
        GatewayUrl = fixture.Gateway.Url,
        GrpcAddress = fixture.Gateway.GrpcAddress,
        ApiKey = fixture.ApiKey,
        AgentId = agentId,
        AuditWalPath = Path.Combine(WalDirectory, $"audit-{created.Count}.wal"),
        AuditFlushInterval = TimeSpan.FromSeconds(0.05),
    };

    public GovernanceClient Create(AgentGovernanceOptions options)
    {
        options.AuditWalPath ??= Path.Combine(WalDirectory, $"audit-{created.Count}.wal");
        var client = new GovernanceClient(options);
        created.Add(client);
        return client;
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var client in created) await client.DisposeAsync();
        try
        {
            Directory.Delete(WalDirectory, recursive: true);
        }
        catch (IOException)
        {
            // temporary
        }
    }
}
