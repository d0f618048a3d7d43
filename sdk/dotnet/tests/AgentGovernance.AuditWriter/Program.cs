// One process of an app that records audit events, started by WriteAheadTests:
//   <gatewayUrl> <apiKey> <agentId> <walPath or "-" for the default file> <count> [mode]
// mode "kill" (default): records, prints "written", then waits to be killed before sending;
// "send": records, sends, prints "sent" and exits; "keyed": the same with two keyed clients
// ("a" and "b", registered with dependency injection) of the agent in this one process.
using AgentGovernance;
using Microsoft.Extensions.DependencyInjection;

if (args.Length is < 5 or > 6)
{
    Console.Error.WriteLine("usage: AgentGovernance.AuditWriter <gatewayUrl> <apiKey> <agentId> <walPath|-> <count> [kill|send|keyed]");
    return 2;
}
var count = int.Parse(args[4], System.Globalization.CultureInfo.InvariantCulture);
var mode = args.Length == 6 ? args[5] : "kill";

void Configure(AgentGovernanceOptions options)
{
    options.GatewayUrl = new Uri(args[0]);
    options.ApiKey = args[1];
    options.AgentId = args[2];
    options.AuditWalPath = args[3] == "-" ? null : args[3];
    options.AuditBatchSize = 100_000;
    options.AuditFlushInterval = TimeSpan.FromSeconds(3600);
    options.CacheEnabled = false;
    options.Timeout = TimeSpan.FromSeconds(5);
}

async Task RecordAsync(IGovernanceClient client, string label)
{
    for (var index = 0; index < count; index++)
    {
        await client.AuditAsync(new AuditRecord
        {
            PluginName = "FilePlugin",
            FunctionName = "ReadFile",
            Allowed = true,
            Duration = TimeSpan.FromMilliseconds(index),
            Arguments = new Dictionary<string, object?> { ["path"] = $"/tmp/{index}" },
            ResultSummary = $"{label}event {index}",
        });
    }
}

// A flush that fails (a gateway busy past the timeout) is tried again, as a service would, for up to a minute.
async Task<bool> SentAsync(IGovernanceClient client)
{
    for (var attempt = 0; attempt < 60; attempt++)
    {
        if (await client.FlushAuditAsync()) return true;
        await Task.Delay(1000);
    }
    return false;
}

if (mode == "keyed")
{
    var services = new ServiceCollection();
    services.AddAgentGovernanceClient("a", Configure);
    services.AddAgentGovernanceClient("b", Configure);
    await using var provider = services.BuildServiceProvider();
    var clients = new[] { provider.GetRequiredKeyedService<IGovernanceClient>("a"), provider.GetRequiredKeyedService<IGovernanceClient>("b") };
    for (var index = 0; index < clients.Length; index++) await RecordAsync(clients[index], $"{(char)('a' + index)} ");
    foreach (var keyed in clients) if (!await SentAsync(keyed)) return 1;
    Console.WriteLine("sent");
    return 0;
}

var options = new AgentGovernanceOptions();
Configure(options);
await using var client = new GovernanceClient(options);
await RecordAsync(client, "");
if (mode == "send")
{
    if (!await SentAsync(client)) return 1;
    Console.WriteLine("sent");
    return 0;
}
Console.WriteLine("written");
await Task.Delay(Timeout.Infinite);
return 0;
