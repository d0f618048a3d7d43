using System.Diagnostics;
using System.Globalization;
using Microsoft.SemanticKernel;

namespace AgentGovernance.Bench;

/// <summary>
/// <c>--profile [calls]</c>: a plain loop of governed calls (cached allow, audit written ahead),
/// for a profiler to sample (<c>dotnet-trace collect -- ...</c>), with the wall time and this
/// process's CPU time per call (every thread of the SDK's: the batcher's sends, the group
/// commit's fsyncs), which a loaded machine inflates much less than the wall time.
/// </summary>
public static class Profile
{
    public static async Task RunAsync(BenchSetup setup, int calls)
    {
        var walDirectory = Directory.CreateTempSubdirectory("agentgov-profile-").FullName;
        await using var client = new GovernanceClient(setup.Options(cache: true, Path.Combine(walDirectory, "profile.wal")));
        var kernel = Kernel.CreateBuilder().Build().AddAgentGovernance(client);
        var read = kernel.Plugins.AddFromType<GovernanceBenchmarks.FilePlugin>("FilePlugin")["ReadFile"];
        var bare = Kernel.CreateBuilder().Build();
        var bareRead = bare.Plugins.AddFromType<GovernanceBenchmarks.FilePlugin>("FilePlugin")["ReadFile"];
        var arguments = new KernelArguments { ["path"] = "/tmp/bench.txt" };
        while ((await client.CheckAsync("FilePlugin", "ReadFile", new Dictionary<string, object?> { ["path"] = "/tmp/bench.txt" })).Source != DecisionSource.Cache) await Task.Delay(20);
        for (var i = 0; i < 2000; i++) await read.InvokeAsync(kernel, arguments);
        var (bareWall, bareCpu) = await MeasureAsync(calls, () => bareRead.InvokeAsync(bare, arguments));
        var (wall, cpu) = await MeasureAsync(calls, () => read.InvokeAsync(kernel, arguments));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"{calls} calls: SK call, no filter {bareWall:0.0} us wall, {bareCpu:0.0} us CPU; governed (cached allow + audit) {wall:0.0} us wall, {cpu:0.0} us CPU per call"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"overhead per call: {wall - bareWall:0.0} us wall, {cpu - bareCpu:0.0} us CPU"));
        await client.FlushAuditAsync();
        Directory.Delete(walDirectory, recursive: true);
    }

    private static async Task<(double WallUs, double CpuUs)> MeasureAsync(int calls, Func<Task<FunctionResult>> call)
    {
        using var process = Process.GetCurrentProcess();
        var cpu = process.TotalProcessorTime;
        var wall = Stopwatch.GetTimestamp();
        for (var i = 0; i < calls; i++) await call();
        var elapsed = Stopwatch.GetElapsedTime(wall);
        process.Refresh();
        return (elapsed.TotalMicroseconds / calls, (process.TotalProcessorTime - cpu).TotalMicroseconds / calls);
    }
}
