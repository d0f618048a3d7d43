// A client that records audit events and is then killed before it can send them: started by
// WriteAheadTests, which kills it once it printed "written".
using AgentGovernance;

if (args.Length != 5)
{
    Console.Error.WriteLine("usage: AgentGovernance.AuditWriter <gatewayUrl> <apiKey> <agentId> <walPath> <count>");
    return 2;
}

var client = new GovernanceClient(new AgentGovernanceOptions
{
    GatewayUrl = new Uri(args[0]),
    ApiKey = args[1],
    AgentId = args[2],
    AuditWalPath = args[3],
    AuditBatchSize = 100_000,
    AuditFlushIntervalSeconds = 3600,
    CacheEnabled = false,
});
var count = int.Parse(args[4], System.Globalization.CultureInfo.InvariantCulture);
for (var index = 0; index < count; index++)
{
    await client.AuditAsync(new AuditRecord
    {
        PluginName = "FilePlugin",
        FunctionName = "ReadFile",
        Allowed = true,
        Duration = TimeSpan.FromMilliseconds(index),
        Arguments = new Dictionary<string, object?> { ["path"] = $"/tmp/{index}" },
        ResultSummary = $"event {index}",
    });
}
Console.WriteLine("written");
await Task.Delay(Timeout.Infinite);
return 0;
