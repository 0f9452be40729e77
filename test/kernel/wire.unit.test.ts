// The wire format on its own (no kernel): signing, verification, frame layout, and drops.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { MessageFactory } from "../../src/kernel/messages.js";
import { WireCodec } from "../../src/kernel/wire.js";

const factory = new MessageFactory();

test("serialize → deserialize round trip, signature is HMAC-SHA256 over the four JSON frames", () => {
  const codec = new WireCodec("secret");
  const msg = factory.executeRequest("print('é')");
  const frames = codec.serialize(msg);
  assert.equal(frames[0].toString(), "<IDS|MSG>");
  const h = createHmac("sha256", "secret");
  for (const f of frames.slice(2, 6)) h.update(f);
  assert.equal(frames[1].toString(), h.digest("hex"));
  const back = codec.deserialize([Buffer.from("routing-id"), ...frames], "shell");
  assert.ok(back);
  assert.deepEqual(back.header, msg.header);
  assert.deepEqual(back.content, msg.content);
  assert.equal(back.channel, "shell");
});

test("a wrong signature, a wrong key, or a tampered frame is dropped and counted", () => {
  const codec = new WireCodec("secret");
  const frames = codec.serialize(factory.kernelInfoRequest());
  const forged = new WireCodec("other").serialize(factory.kernelInfoRequest());
  const tampered = [...frames];
  tampered[5] = Buffer.from('{"x":1}');
  const badHex = [...frames];
  badHex[1] = Buffer.from("zz".repeat(32));
  assert.equal(codec.deserialize(forged), null);
  assert.equal(codec.deserialize(tampered), null);
  assert.equal(codec.deserialize(badHex), null);
  assert.equal(codec.invalidSignatures, 3);
  assert.ok(codec.deserialize(frames));
});

test("malformed frames are dropped and counted separately", () => {
  const codec = new WireCodec("");
  assert.equal(codec.deserialize([Buffer.from("no delimiter")]), null);
  const frames = codec.serialize(factory.kernelInfoRequest());
  frames[2] = Buffer.from("{not json");
  assert.equal(codec.deserialize(frames), null);
  assert.equal(codec.malformed, 2);
  assert.equal(codec.invalidSignatures, 0);
});

test("extra frames after content are buffers; msg_ids are unique per factory", () => {
  const codec = new WireCodec("k");
  const msg = factory.kernelInfoRequest();
  msg.buffers = [new Uint8Array([1, 2, 3])];
  const back = codec.deserialize(codec.serialize(msg));
  assert.deepEqual([...(back?.buffers?.[0] ?? [])], [1, 2, 3]);
  const ids = new Set(Array.from({ length: 1000 }, () => factory.nextMsgId()));
  assert.equal(ids.size, 1000);
});
