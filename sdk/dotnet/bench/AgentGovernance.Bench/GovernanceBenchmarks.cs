using System.Diagnostics;
using AgentGovernance.SemanticKernel;
using BenchmarkDotNet.Attributes;
using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Toolchains.InProcess.Emit;
using Microsoft.SemanticKernel;

namespace AgentGovernance.Bench;

/// <summary>Where the gateway started by Program is: passed to the benchmarks (run in the same process) through the environment.</summary>
public sealed record BenchSetup(Uri GatewayUrl, string GrpcAddress, string ApiKey, string AgentId)
{
    public void Export()
    {
        Environment.SetEnvironmentVariable("AGENTGOV_BENCH_GATEWAY_URL", GatewayUrl.ToString());
        Environment.SetEnvironmentVariable("AGENTGOV_BENCH_GRPC_ADDRESS", GrpcAddress);
        Environment.SetEnvironmentVariable("AGENTGOV_BENCH_API_KEY", ApiKey);
        Environment.SetEnvironmentVariable("AGENTGOV_BENCH_AGENT_ID", AgentId);
    }

    public static BenchSetup Import() => new(
        new Uri(Environment.GetEnvironmentVariable("AGENTGOV_BENCH_GATEWAY_URL") ?? throw new InvalidOperationException("run the bench through its Program, which starts the gateway")),
        Environment.GetEnvironmentVariable("AGENTGOV_BENCH_GRPC_ADDRESS")!,
        Environment.GetEnvironmentVariable("AGENTGOV_BENCH_API_KEY")!,
        Environment.GetEnvironmentVariable("AGENTGOV_BENCH_AGENT_ID")!);

    public AgentGovernanceOptions Options(bool cache, string walPath, AuditDurability durability = AuditDurability.GroupCommit) => new()
    {
        AuditDurability = durability,
        GatewayUrl = GatewayUrl,
        GrpcAddress = GrpcAddress,
        ApiKey = ApiKey,
        AgentId = AgentId,
        CacheEnabled = cache,
        AuditWalPath = walPath,
    };
}

/// <summary>In this process (the gateway is a child of it), a short job: 2 shared cores, and other work on them.</summary>
public sealed class BenchConfig : ManualConfig
{
    public BenchConfig()
    {
        AddJob(Job.Default
            .WithToolchain(InProcessEmitToolchain.Instance)
            .WithWarmupCount(3)
            .WithIterationCount(15)
            .WithIterationTime(Perfolizer.Horology.TimeInterval.FromMilliseconds(400)));
        AddColumn(StatisticColumn.P50, StatisticColumn.P95);
        AddLogicalGroupRules(BenchmarkLogicalGroupRule.ByCategory);
        AddColumn(CategoriesColumn.Default);
        // Under bin/, not wherever the bench was started from.
        WithArtifactsPath(Path.Combine(AppContext.BaseDirectory, "BenchmarkDotNet.Artifacts"));
    }
}

[Config(typeof(BenchConfig))]
[MemoryDiagnoser]
public class GovernanceBenchmarks
{
    private static readonly Dictionary<string, object?> Arguments = new() { ["path"] = "/tmp/bench.txt" };

    private readonly string walDirectory = Directory.CreateTempSubdirectory("agentgov-bench-").FullName;
    private GovernanceClient uncached = null!;
    private GovernanceClient cached = null!;
    private GovernanceClient governing = null!;
    private GovernanceClient governingSync = null!;
    private Kernel bare = null!;
    private Kernel governed = null!;
    private KernelFunction bareRead = null!;
    private KernelFunction governedRead = null!;
    private Kernel governedSync = null!;
    private KernelFunction governedSyncRead = null!;
    private readonly KernelArguments kernelArguments = new() { ["path"] = "/tmp/bench.txt" };

    [GlobalSetup]
    public void Setup()
    {
        var setup = BenchSetup.Import();
        uncached = new GovernanceClient(setup.Options(cache: false, Path.Combine(walDirectory, "uncached.wal")));
        cached = new GovernanceClient(setup.Options(cache: true, Path.Combine(walDirectory, "cached.wal")));
        governing = new GovernanceClient(setup.Options(cache: true, Path.Combine(walDirectory, "governed.wal")));
        bare = Kernel.CreateBuilder().Build();
        bareRead = bare.Plugins.AddFromType<FilePlugin>("FilePlugin")["ReadFile"];
        governed = Kernel.CreateBuilder().Build().AddAgentGovernance(governing);
        governedRead = governed.Plugins.AddFromType<FilePlugin>("FilePlugin")["ReadFile"];
        governingSync = new GovernanceClient(setup.Options(cache: true, Path.Combine(walDirectory, "governed-sync.wal"), AuditDurability.Sync));
        governedSync = Kernel.CreateBuilder().Build().AddAgentGovernance(governingSync);
        governedSyncRead = governedSync.Plugins.AddFromType<FilePlugin>("FilePlugin")["ReadFile"];
        WaitForCache(() => cached.CheckAsync("FilePlugin", "ReadFile", Arguments).GetAwaiter().GetResult());
        WaitForCache(() => governing.CheckAsync("FilePlugin", "ReadFile", Arguments).GetAwaiter().GetResult());
        WaitForCache(() => governingSync.CheckAsync("FilePlugin", "ReadFile", Arguments).GetAwaiter().GetResult());
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        uncached.Dispose();
        cached.Dispose();
        governing.Dispose();
        governingSync.Dispose();
        Directory.Delete(walDirectory, recursive: true);
    }

    [Benchmark(Baseline = true, Description = "check, uncached (gRPC round trip)")]
    [BenchmarkCategory("check")]
    public Task<PolicyDecision> UncachedCheck() => uncached.CheckAsync("FilePlugin", "ReadFile", Arguments);

    [Benchmark(Description = "check, cached")]
    [BenchmarkCategory("check")]
    public Task<PolicyDecision> CachedCheck() => cached.CheckAsync("FilePlugin", "ReadFile", Arguments);

    [Benchmark(Baseline = true, Description = "SK function call, no filter")]
    [BenchmarkCategory("filter")]
    public Task<FunctionResult> BareCall() => bareRead.InvokeAsync(bare, kernelArguments);

    [Benchmark(Description = "SK function call, governed (cached allow + audit)")]
    [BenchmarkCategory("filter")]
    public Task<FunctionResult> GovernedCall() => governedRead.InvokeAsync(governed, kernelArguments);

    [Benchmark(Description = "SK function call, governed, AuditDurability.Sync (an fsync per call)")]
    [BenchmarkCategory("filter")]
    public Task<FunctionResult> GovernedSyncCall() => governedSyncRead.InvokeAsync(governedSync, kernelArguments);

    private static void WaitForCache(Func<PolicyDecision> check)
    {
        var deadline = Stopwatch.StartNew();
        while (check().Source != DecisionSource.Cache)
        {
            if (deadline.Elapsed > TimeSpan.FromSeconds(10)) throw new InvalidOperationException("no answer came from the cache within 10 s");
            Thread.Sleep(20);
        }
    }

    public sealed class FilePlugin
    {
        [KernelFunction]
        public static string ReadFile(string path) => path;
    }
}
