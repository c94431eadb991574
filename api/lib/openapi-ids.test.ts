import { describe, expect, it } from "vitest";
import { operationId } from "./openapi-ids.js";

describe("operationId", () => {
  it("names an operation by its method and path, parameters as by_<name>", () => {
    expect(operationId("get", "/tokenized_vault/{vault_address}")).toBe("get_tokenized_vault_by_vault_address");
    expect(operationId("get", "/tokenized_vault/{vault_address}/historical-timeseries")).toBe(
      "get_tokenized_vault_by_vault_address_historical_timeseries",
    );
    expect(operationId("POST", "/integrations/dex_pool/{pool_address}/deposit/{address}")).toBe(
      "post_integrations_dex_pool_by_pool_address_deposit_by_address",
    );
    expect(operationId("get", "/")).toBe("get_root");
  });

  it("gives different names to the operations of one path", () => {
    const p = "/subaccounts/{address}/swaps";
    expect(operationId("get", p)).not.toBe(operationId("post", p));
  });
});
