using System.Globalization;
using BenchmarkDotNet.Reports;

namespace AgentGovernance.Bench;

/// <summary>The two numbers the README reports, from BenchmarkDotNet's means.</summary>
public static class BenchReport
{
    public static void Print(Summary summary)
    {
        double Mean(string method) => summary.Reports.Single(report => report.BenchmarkCase.Descriptor.WorkloadMethod.Name == method).ResultStatistics!.Mean;
        double Median(string method) => summary.Reports.Single(report => report.BenchmarkCase.Descriptor.WorkloadMethod.Name == method).ResultStatistics!.Median;
        var speedup = Mean(nameof(GovernanceBenchmarks.UncachedCheck)) / Mean(nameof(GovernanceBenchmarks.CachedCheck));
        var speedupMedian = Median(nameof(GovernanceBenchmarks.UncachedCheck)) / Median(nameof(GovernanceBenchmarks.CachedCheck));
        var overheadUs = (Mean(nameof(GovernanceBenchmarks.GovernedCall)) - Mean(nameof(GovernanceBenchmarks.BareCall))) / 1000;
        var overheadMedianUs = (Median(nameof(GovernanceBenchmarks.GovernedCall)) - Median(nameof(GovernanceBenchmarks.BareCall))) / 1000;
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"cached check: {speedup:0}x faster than an uncached gRPC round trip (mean; {speedupMedian:0}x by median); target at least 50x: {(speedup >= 50 ? "met" : "NOT met")}"));
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"governance filter overhead on a cached allowed call: {overheadUs:0.0} us (mean; {overheadMedianUs:0.0} us by median), the audit event's fsync included"));
    }
}
