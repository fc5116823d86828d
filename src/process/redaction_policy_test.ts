import assert from "node:assert/strict";
import { RedactionPolicy } from "./redaction_policy.ts";

Deno.test("RedactionPolicy: by name, by value everywhere, URL passwords, token shapes", () => {
  const policy = new RedactionPolicy();
  policy.addEnv({ HF_TOKEN: "abcd1234", PLAIN: "visible", DB: "mysql://me:pw9876@h/db" });
  policy.addArgv(["train", "--api-key", "k-5555", "--password=p-6666", "--steps", "4"]);
  const text = "token abcd1234 in a message; pw9876 alone; k-5555 and p-6666; steps 4 visible";
  assert.equal(
    policy.redactText(text),
    "token <redacted> in a message; <redacted> alone; <redacted> and <redacted>; steps 4 visible",
  );
  assert.equal(
    policy.redactText("see https://u:other-secret@example.com/x"),
    "see https://u:<redacted>@example.com/x",
  );
  const aws = "AKIA" + "ABCDEFGHIJKLMNOP";
  assert.equal(policy.redactText(`key=${aws}`), "key=<redacted>");
  assert.equal(policy.redactText(`hf_${"x".repeat(34)}`), "<redacted>");
});

Deno.test("RedactionPolicy: redactValue copies, redacting strings only", () => {
  const policy = new RedactionPolicy();
  policy.addValue("s3cr3t");
  const value = { argv: ["--x", "s3cr3t"], n: 3, cache_key: "abc", nested: { m: "a s3cr3t b" } };
  assert.deepEqual(policy.redactValue(value), {
    argv: ["--x", "<redacted>"],
    n: 3,
    cache_key: "abc",
    nested: { m: "a <redacted> b" },
  });
  assert.equal(value.argv[1], "s3cr3t", "the input is not modified");
  policy.addValue("ab"); // too short to redact by value
  assert.equal(policy.redactText("ab cd"), "ab cd");
});

Deno.test("RedactionPolicy: flag words and plain numbers are not redacted by value", () => {
  const policy = new RedactionPolicy();
  policy.addEnv({
    USE_API_KEY: "true",
    KEY_COUNT: "1024",
    TOKEN_TTL: "3600.5",
    API_KEY: "k3y-val",
  });
  assert.equal(policy.size, 1);
  assert.equal(
    policy.redactText("resume: true\nsteps: 1024\nk3y-val"),
    "resume: true\nsteps: 1024\n<redacted>",
  );
});

Deno.test("RedactionPolicy: tokenizer flags and variables are not secrets; real ones are", () => {
  const policy = new RedactionPolicy();
  policy.addEnv({ TOKENIZERS_PARALLELISM: "falsey-ish", TOKENIZER_PATH: "/models/tok" });
  policy.addArgv([
    "train.py",
    "--tokenizer_name=gpt2-custom",
    "--tokenizer_name",
    "bert-base-uncased",
    "--max_new_tokens=128",
    "--hf_token=hf-secret-1",
    "--api-key",
    "k-secret-2",
  ]);
  assert.equal(
    policy.redactText("gpt2-custom bert-base-uncased /models/tok falsey-ish 128"),
    "gpt2-custom bert-base-uncased /models/tok falsey-ish 128",
  );
  assert.equal(policy.redactText("hf-secret-1 k-secret-2"), "<redacted> <redacted>");
  policy.addEnv({ HF_TOKEN: "hf-secret-3", API_KEY: "k-secret-4" });
  assert.equal(policy.redactText("hf-secret-3 k-secret-4"), "<redacted> <redacted>");
  assert.equal(policy.redactText(`hf_${"A".repeat(34)}`), "<redacted>", "token shapes still");
});
