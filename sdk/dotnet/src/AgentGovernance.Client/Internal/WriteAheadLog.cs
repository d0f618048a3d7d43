using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using System.Threading.Channels;

namespace AgentGovernance.Internal;

/// <summary>
/// The audit events' write-ahead file, in the format the Python and TypeScript SDKs write: one
/// JSON line <c>{"event": {...}}</c> per event, appended and fsynced before the caller hears
/// back (events appended together share one fsync), and one line <c>{"ack": [ids]}</c> per
/// batch the gateway took. Emptied when nothing is left unacknowledged, rewritten with only the
/// unacknowledged events when it grows. One live client per file: <c>&lt;file&gt;.lock</c> is held
/// exclusively (an OS lock, so a crashed process leaves no stale lock).
/// </summary>
internal sealed partial class WriteAheadLog : IAsyncDisposable
{
    /// <summary>Rewrite the file once this much was appended while events stayed unacknowledged.</summary>
    private const long CompactAfterBytes = 4 * 1024 * 1024;

    private readonly string path;
    private readonly FileStream lockFile;
    private readonly SemaphoreSlim gate = new(1, 1);
    private readonly OrderedDictionary<string, byte[]> open = new(StringComparer.Ordinal);
    private readonly Channel<PendingAppend> appends = Channel.CreateUnbounded<PendingAppend>(new UnboundedChannelOptions { SingleReader = true });
    private readonly Task writer;
    private FileStream file;
    private long appendedBytes;

    private WriteAheadLog(string path, FileStream lockFile, IReadOnlyList<AuditEvent> unacknowledged)
    {
        this.path = path;
        this.lockFile = lockFile;
        foreach (var auditEvent in unacknowledged) open[auditEvent.EventId] = auditEvent.Json;
        Unacknowledged = unacknowledged;
        file = Rewrite(previous: null);
        writer = Task.Run(WriteAppendsAsync);
    }

    /// <summary>The events the file held unacknowledged when it was opened, in the order written.</summary>
    public IReadOnlyList<AuditEvent> Unacknowledged { get; }

    /// <summary>Opens (creating) the file, taking its lock, or throws when another live client holds it.</summary>
    public static WriteAheadLog Open(string path)
    {
        var fullPath = Path.GetFullPath(path);
        Directory.CreateDirectory(Path.GetDirectoryName(fullPath)!);
        var lockFile = TakeLock(fullPath);
        try
        {
            return new WriteAheadLog(fullPath, lockFile, ReadUnacknowledged(fullPath));
        }
        catch
        {
            lockFile.Dispose();
            throw;
        }
    }

    /// <summary>Appends the event; completes once it is on disk.</summary>
    public Task AppendAsync(AuditEvent auditEvent)
    {
        var pending = new PendingAppend(auditEvent, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));
        if (!appends.Writer.TryWrite(pending)) throw new ObjectDisposedException(nameof(WriteAheadLog), "the audit write-ahead file is closed");
        return pending.Written.Task;
    }

    /// <summary>Records that the gateway has these events; empties or compacts the file when it can.</summary>
    public async Task AcknowledgeAsync(IReadOnlyCollection<string> eventIds)
    {
        await gate.WaitAsync().ConfigureAwait(false);
        try
        {
            foreach (var id in eventIds) open.Remove(id);
            if (open.Count == 0 || appendedBytes > CompactAfterBytes)
            {
                file = Rewrite(file);
                return;
            }
            // Not fsynced: a lost acknowledgement only means a resend, which the gateway records once.
            var line = new MemoryStream();
            using (var json = new Utf8JsonWriter(line))
            {
                json.WriteStartObject();
                json.WriteStartArray("ack");
                foreach (var id in eventIds) json.WriteStringValue(id);
                json.WriteEndArray();
                json.WriteEndObject();
            }
            line.WriteByte((byte)'\n');
            await file.WriteAsync(line.ToArray()).ConfigureAwait(false);
        }
        finally
        {
            gate.Release();
        }
    }

    /// <summary>Finishes the appends asked for, closes the file and releases its lock.</summary>
    public async ValueTask DisposeAsync()
    {
        appends.Writer.TryComplete();
        await writer.ConfigureAwait(false);
        await gate.WaitAsync().ConfigureAwait(false);
        await file.DisposeAsync().ConfigureAwait(false);
        await lockFile.DisposeAsync().ConfigureAwait(false);
        gate.Dispose();
    }

    private async Task WriteAppendsAsync()
    {
        var reader = appends.Reader;
        var batch = new List<PendingAppend>();
        while (await reader.WaitToReadAsync().ConfigureAwait(false))
        {
            batch.Clear();
            while (reader.TryRead(out var pending)) batch.Add(pending);
            await gate.WaitAsync().ConfigureAwait(false);
            try
            {
                var bytes = new MemoryStream();
                foreach (var pending in batch)
                {
                    bytes.Write(LineOf(pending.Event));
                    open[pending.Event.EventId] = pending.Event.Json;
                }
                await file.WriteAsync(bytes.GetBuffer().AsMemory(0, (int)bytes.Length)).ConfigureAwait(false);
                file.Flush(flushToDisk: true);
                appendedBytes += bytes.Length;
                foreach (var pending in batch) pending.Written.TrySetResult();
            }
            catch (Exception error) when (error is IOException or UnauthorizedAccessException)
            {
                foreach (var pending in batch)
                {
                    open.Remove(pending.Event.EventId);
                    pending.Written.TrySetException(error);
                }
            }
            finally
            {
                gate.Release();
            }
        }
    }

    /// <summary>
    /// Replaces the file by the unacknowledged events only, atomically: a temporary file, fsync,
    /// rename, fsync of the directory, so an event already on disk stays on disk whatever happens next.
    /// </summary>
    private FileStream Rewrite(FileStream? previous)
    {
        // Closed first: Windows refuses to replace or truncate a file that is still open.
        previous?.Dispose();
        if (open.Count == 0)
        {
            var emptied = new FileStream(path, FileMode.Create, FileAccess.Write, FileShare.Read, bufferSize: 0);
            emptied.Flush(flushToDisk: true);
            appendedBytes = 0;
            return emptied;
        }
        var temporary = path + ".compact";
        using (var compacted = new FileStream(temporary, FileMode.Create, FileAccess.Write, FileShare.None, bufferSize: 0))
        {
            var bytes = new MemoryStream();
            foreach (var (id, json) in open) bytes.Write(LineOf(new AuditEvent(id, json)));
            compacted.Write(bytes.GetBuffer().AsSpan(0, (int)bytes.Length));
            compacted.Flush(flushToDisk: true);
        }
        File.Move(temporary, path, overwrite: true);
        SyncDirectory(Path.GetDirectoryName(path)!);
        appendedBytes = 0;
        var reopened = new FileStream(path, FileMode.Open, FileAccess.Write, FileShare.Read, bufferSize: 0);
        reopened.Seek(0, SeekOrigin.End);
        return reopened;
    }

    private static byte[] LineOf(AuditEvent auditEvent)
    {
        var line = new byte[auditEvent.Json.Length + 11];
        "{\"event\":"u8.CopyTo(line);
        auditEvent.Json.CopyTo(line, 9);
        line[^2] = (byte)'}';
        line[^1] = (byte)'\n';
        return line;
    }

    /// <summary>
    /// The file's events never acknowledged, in the order written. A line that is not JSON (a
    /// crash mid-append, never acknowledged to anyone) is skipped.
    /// </summary>
    private static List<AuditEvent> ReadUnacknowledged(string path)
    {
        if (!File.Exists(path)) return [];
        var events = new Dictionary<string, AuditEvent>(StringComparer.Ordinal);
        var order = new List<string>();
        foreach (var line in File.ReadLines(path, Encoding.UTF8))
        {
            if (string.IsNullOrWhiteSpace(line)) continue;
            try
            {
                using var record = JsonDocument.Parse(line);
                var root = record.RootElement;
                if (root.ValueKind != JsonValueKind.Object) continue;
                if (root.TryGetProperty("event", out var body) && body.ValueKind == JsonValueKind.Object && body.TryGetProperty("eventId", out var id) && id.ValueKind == JsonValueKind.String)
                {
                    var eventId = id.GetString()!;
                    if (!events.ContainsKey(eventId)) order.Add(eventId);
                    events[eventId] = new AuditEvent(eventId, Encoding.UTF8.GetBytes(body.GetRawText()));
                }
                if (root.TryGetProperty("ack", out var acks) && acks.ValueKind == JsonValueKind.Array)
                {
                    foreach (var ack in acks.EnumerateArray()) if (ack.ValueKind == JsonValueKind.String) events.Remove(ack.GetString()!);
                }
            }
            catch (JsonException)
            {
                continue;
            }
        }
        return [.. order.Where(events.ContainsKey).Select(id => events[id])];
    }

    /// <summary>
    /// Holds <c>&lt;file&gt;.lock</c> exclusively for the client's life. Two clients on one file each
    /// resent the other's events and, emptying the file when their own were acknowledged, dropped
    /// the other's unacknowledged ones.
    /// </summary>
    private static FileStream TakeLock(string path)
    {
        var lockPath = path + ".lock";
        try
        {
            var lockFile = new FileStream(lockPath, FileMode.OpenOrCreate, FileAccess.ReadWrite, FileShare.None, bufferSize: 0);
            lockFile.SetLength(0);
            lockFile.Write(Encoding.ASCII.GetBytes(Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture)));
            return lockFile;
        }
        catch (IOException error)
        {
            throw new InvalidOperationException($"the audit write-ahead file {path} is in use by another client; give each client its own AuditWalPath", error);
        }
    }

    /// <summary>Makes a rename in <paramref name="directory"/> durable (POSIX: fsync of the directory; Windows renames durably).</summary>
    private static void SyncDirectory(string directory)
    {
        if (OperatingSystem.IsWindows()) return;
        var descriptor = NativeMethods.Open(directory, 0);
        if (descriptor < 0) return;
        try
        {
            _ = NativeMethods.Fsync(descriptor);
        }
        finally
        {
            _ = NativeMethods.Close(descriptor);
        }
    }

    private sealed record PendingAppend(AuditEvent Event, TaskCompletionSource Written);

    private static partial class NativeMethods
    {
        [LibraryImport("libc", EntryPoint = "open", StringMarshalling = StringMarshalling.Utf8)]
        public static partial int Open(string path, int flags);

        [LibraryImport("libc", EntryPoint = "fsync")]
        public static partial int Fsync(int descriptor);

        [LibraryImport("libc", EntryPoint = "close")]
        public static partial int Close(int descriptor);
    }
}
