/**
 * The events of one HTTP MCP session's response streams, kept so that a client whose connection
 * broke can resume a stream (Streamable HTTP resumability: a GET with `Last-Event-ID` replays what
 * came after that event, then the stream goes on; docs/mcp.md, "Disconnects"). A disconnect is not
 * a cancellation: the call goes on, and its progress and result wait here for the client.
 *
 * Bounded: each stream keeps its newest MAX_EVENTS_PER_STREAM events (older progress is dropped; the
 * result is the last event), and the session keeps at most MAX_BYTES of events, the oldest streams
 * going first. Memory only: the session (and its kernels) does not outlive the process either.
 */
import type { EventId, EventStore, StreamId } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const MAX_EVENTS_PER_STREAM = 256;
const MAX_BYTES = 32 * 1024 * 1024;

interface Stored {
  seq: number;
  message: JSONRPCMessage;
  bytes: number;
}

export class SessionEventStore implements EventStore {
  /** Streams by id, oldest first (a Map keeps insertion order). */
  private readonly streams = new Map<StreamId, Stored[]>();
  private next = 1;
  private bytes = 0;

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    let events = this.streams.get(streamId);
    if (!events) {
      events = [];
      this.streams.set(streamId, events);
    }
    const stored = { seq: this.next++, message, bytes: JSON.stringify(message).length };
    events.push(stored);
    this.bytes += stored.bytes;
    if (events.length > MAX_EVENTS_PER_STREAM) this.bytes -= events.shift()!.bytes;
    for (const [id, old] of this.streams) {
      if (this.bytes <= MAX_BYTES || id === streamId) break;
      for (const e of old) this.bytes -= e.bytes;
      this.streams.delete(id);
    }
    return eventId(streamId, stored.seq);
  }

  async getStreamIdForEventId(id: EventId): Promise<StreamId | undefined> {
    const parsed = parse(id);
    return parsed && this.streams.has(parsed.streamId) ? parsed.streamId : undefined;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const parsed = parse(lastEventId);
    const events = parsed && this.streams.get(parsed.streamId);
    if (!parsed || !events) throw new Error(`no stream has event ${lastEventId} (any more)`);
    for (const e of events) {
      if (e.seq > parsed.seq) await send(eventId(parsed.streamId, e.seq), e.message);
    }
    return parsed.streamId;
  }
}

function eventId(streamId: StreamId, seq: number): EventId {
  return `${streamId}.${seq}`;
}

function parse(id: EventId): { streamId: StreamId; seq: number } | undefined {
  const dot = id.lastIndexOf(".");
  const seq = Number(id.slice(dot + 1));
  if (dot <= 0 || !Number.isInteger(seq)) return undefined;
  return { streamId: id.slice(0, dot), seq };
}
