import { deepEqual, equal } from "node:assert/strict";
import { isSecretName, REDACTED, redactEnv } from "./redact.ts";

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
    KEYBOARD_LAYOUT: "us", // contains KEY: redacted too, erring on the side of caution
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
    KEYBOARD_LAYOUT: REDACTED,
  });
  equal(env.HF_TOKEN, "hf_abc", "the input is not modified");
  deepEqual(Object.keys(redactEnv(env)), Object.keys(env));
});

Deno.test("isSecretName() matches anywhere in the name, in any case", () => {
  equal(isSecretName("wandb_api_Key"), true);
  equal(isSecretName("GITHUB_TOKEN"), true);
  equal(isSecretName("MASTER_ADDR"), false);
  equal(isSecretName("WORLD_SIZE"), false);
  equal(REDACTED, "<redacted>");
});
