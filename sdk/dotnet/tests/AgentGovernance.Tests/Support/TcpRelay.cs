using System.Net;
using System.Net.Sockets;

namespace AgentGovernance.Tests.Support;

/// <summary>
/// A TCP relay to a port that a test can cut and restore: what a client sees when the gateway
/// goes away and comes back, without stopping the shared gateway.
/// </summary>
public sealed class TcpRelay : IAsyncDisposable
{
    private readonly int targetPort;
    private readonly object sync = new();
    private readonly List<TcpClient> connections = [];
    private TcpListener? listener;

    public TcpRelay(int targetPort)
    {
        this.targetPort = targetPort;
        Port = GatewayProcess.FreePort();
    }

    public int Port { get; }

    public void Start()
    {
        var started = new TcpListener(IPAddress.Loopback, Port);
        started.Server.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
        started.Start();
        lock (sync) listener = started;
        _ = AcceptAsync(started);
    }

    /// <summary>Refuses new connections and cuts the open ones.</summary>
    public void Stop()
    {
        lock (sync)
        {
            listener?.Stop();
            listener = null;
            foreach (var connection in connections) connection.Dispose();
            connections.Clear();
        }
    }

    public ValueTask DisposeAsync()
    {
        Stop();
        return ValueTask.CompletedTask;
    }

    private async Task AcceptAsync(TcpListener accepting)
    {
        while (true)
        {
            TcpClient client;
            try
            {
                client = await accepting.AcceptTcpClientAsync();
            }
            catch (Exception error) when (error is SocketException or ObjectDisposedException)
            {
                return;
            }
            var upstream = new TcpClient();
            try
            {
                await upstream.ConnectAsync(IPAddress.Loopback, targetPort);
            }
            catch (SocketException)
            {
                client.Dispose();
                upstream.Dispose();
                continue;
            }
            lock (sync)
            {
                if (!ReferenceEquals(listener, accepting))
                {
                    client.Dispose();
                    upstream.Dispose();
                    return;
                }
                connections.Add(client);
                connections.Add(upstream);
            }
            _ = PipeAsync(client, upstream);
            _ = PipeAsync(upstream, client);
        }
    }

    private static async Task PipeAsync(TcpClient source, TcpClient sink)
    {
        try
        {
            await source.GetStream().CopyToAsync(sink.GetStream());
        }
        catch (Exception error) when (error is IOException or ObjectDisposedException or SocketException or InvalidOperationException)
        {
            // cut
        }
        finally
        {
            source.Dispose();
            sink.Dispose();
        }
    }
}
