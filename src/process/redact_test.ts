import { deepEqual, equal } from "node:assert/strict";
import { isSecretName, nameWords, REDACTED, redactEnv } from "./redact.ts";

Deno.test("redactEnv() hides values of secret-looking names and keeps the rest", () => {
  const env = {
    HF_TOKEN: "hf_abc",
    AWS_SECRET_ACCESS_KEY: "s3cr3t",
    api_key: "k",
    DB_PASSWORD: "pw",
    MYSQL_PASSWD: "pw2",
    GOOGLE_APPLICATION_CREDENTIALS: "/path/creds.json",
    PARITY_SEED: "1234",
    PATH: "/usr/bin",
    KEYBOARD_LAYOUT: "us", // KEY inside a word (KEYBOARD) is not a secret word
    TOKENIZERS_PARALLELISM: "false",
  };
  deepEqual(redactEnv(env), {
    HF_TOKEN: REDACTED,
    AWS_SECRET_ACCESS_KEY: REDACTED,
    api_key: REDACTED,
    DB_PASSWORD: REDACTED,
    MYSQL_PASSWD: REDACTED,
    GOOGLE_APPLICATION_CREDENTIALS: REDACTED,
    PARITY_SEED: "1234",
    PATH: "/usr/bin",
    KEYBOARD_LAYOUT: "us",
    TOKENIZERS_PARALLELISM: "false",
  });
  equal(env.HF_TOKEN, "hf_abc", "the input is not modified");
  deepEqual(Object.keys(redactEnv(env)), Object.keys(env));
});

Deno.test("isSecretName() matches a word ending in a secret word, in any case", () => {
  for (
    const name of [
      "wandb_api_Key",
      "GITHUB_TOKEN",
      "HF_TOKEN",
      "hf_token",
      "HUGGING_FACE_HUB_TOKEN",
      "API_KEY",
      "APIKEY",
      "apiKey",
      "accessToken",
      "AWS_SECRET_ACCESS_KEY",
      "PGPASSWORD",
      "DB_PASSWD",
      "GOOGLE_APPLICATION_CREDENTIALS",
      "API_KEYS",
      "CLIENT_SECRETS",
      "TOKEN_TTL",
    ]
  ) equal(isSecretName(name), true, name);
  for (
    const name of [
      "MASTER_ADDR",
      "WORLD_SIZE",
      "TOKENIZERS_PARALLELISM",
      "tokenizer_name",
      "tokenizerName",
      "TOKENIZER",
      "KEYBOARD_LAYOUT",
      "max_new_tokens",
      "MAX_TOKENS",
      "SECRETARY",
    ]
  ) equal(isSecretName(name), false, name);
  equal(REDACTED, "<redacted>");
});

Deno.test("nameWords() splits at separators and case changes", () => {
  deepEqual(nameWords("TOKENIZERS_PARALLELISM"), ["TOKENIZERS", "PARALLELISM"]);
  deepEqual(nameWords("--hf-token"), ["hf", "token"]);
  deepEqual(nameWords("apiKey2"), ["api", "Key2"]);
});
