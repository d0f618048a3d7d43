using System.Net;
using System.Net.Sockets;

namespace AgentGovernance.Tests.Support;

/// <summary>Accepts connections and never answers: a gateway that hangs.</summary>
public sealed class StalledServer : IAsyncDisposable
{
    private readonly TcpListener listener = new(IPAddress.Loopback, 0);
    private readonly List<TcpClient> held = [];
    private readonly CancellationTokenSource stopping = new();
    private readonly Task accepting;

    public StalledServer()
    {
        listener.Start();
        Port = ((IPEndPoint)listener.LocalEndpoint).Port;
        accepting = AcceptAsync();
    }

    public int Port { get; }

    public string Address => $"127.0.0.1:{Port}";

    /// <summary>How many connections it has accepted.</summary>
    public int Accepted
    {
        get
        {
            lock (held) return held.Count;
        }
    }

    public async ValueTask DisposeAsync()
    {
        await stopping.CancelAsync();
        listener.Stop();
        try
        {
            await accepting;
        }
        catch (Exception error) when (error is OperationCanceledException or SocketException or ObjectDisposedException)
        {
            // stopped
        }
        lock (held) foreach (var connection in held) connection.Dispose();
        stopping.Dispose();
    }

    private async Task AcceptAsync()
    {
        while (!stopping.IsCancellationRequested)
        {
            var connection = await listener.AcceptTcpClientAsync(stopping.Token);
            lock (held) held.Add(connection);
        }
    }
}
