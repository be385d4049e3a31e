// Streams a chat completion with the official OpenAI Node SDK and checks what arrives.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH.split(":").pop(), "x.js"));
const OpenAI = require("openai");
const Client = OpenAI.default ?? OpenAI;

const client = new Client({ baseURL: process.argv[2], apiKey: "unused", maxRetries: 0, timeout: 60000 });
const models = await client.models.list();
const model = models.data[0].id;
const stream = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "Stream me eight words." }],
  max_tokens: 8,
  stream: true,
  stream_options: { include_usage: true },
});
let text = "";
let finish = null;
let usage = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    text += choice.delta?.content ?? "";
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
const words = text.trim().split(/\s+/).length;
if (words !== 8 || finish !== "length" || !usage || usage.completion_tokens !== 8) {
  console.error(`unexpected stream: words=${words} finish=${finish} usage=${JSON.stringify(usage)} text=${text}`);
  process.exit(1);
}
console.log(`openai sdk: streamed ${words} words, finish_reason ${finish}, usage ${JSON.stringify(usage)}`);
