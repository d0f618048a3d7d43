// The .NET SDK's bench (sdk/dotnet/README.md): starts a real gateway (node dist/src/main.js, as
// the tests do), then BenchmarkDotNet measures a check answered from the cache against an
// uncached gRPC round trip, and a Semantic Kernel function call with the governance filters
// (cached allow, audit written ahead) against the same call without them.
//   dotnet run -c Release --project sdk/dotnet/bench/AgentGovernance.Bench
//   dotnet run -c Release --project sdk/dotnet/bench/AgentGovernance.Bench -- --profile [calls]   (Profile.cs)
using AgentGovernance.Bench;
using AgentGovernance.Tests.Support;
using BenchmarkDotNet.Running;

await using var gateway = await GatewayProcess.StartAsync();
var setup = new BenchSetup(gateway.Url, gateway.GrpcAddress, await gateway.CreateApiKeyAsync("sdk-dotnet-bench"), await gateway.CreateAgentAsync("sdk-dotnet-bench", "verified", "finance"));
setup.Export();
Console.WriteLine($"gateway {gateway.Url} (gRPC {gateway.GrpcAddress}) on {(gateway.OnPostgres ? "PostgreSQL" : "embedded PGlite")}");
if (args is ["--profile", ..])
{
    await Profile.RunAsync(setup, args.Length > 1 ? int.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 20_000);
    return 0;
}
var summary = BenchmarkRunner.Run<GovernanceBenchmarks>(args: args);
BenchReport.Print(summary);
return summary.HasCriticalValidationErrors || summary.Reports.Any(report => !report.Success) ? 1 : 0;
