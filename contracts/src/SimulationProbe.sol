// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/**
 * @notice Never deployed. The transaction builders put this code at the trader's address in an
 * `eth_call` state override, to simulate a build on a node without `eth_simulateV1`: calling
 * `run` there makes the module call with the trader as its sender, between the reads before and
 * after it, all in one call on the head's state. It never reverts: a failed call comes back as
 * `success = false` with its revert data, a failed read as empty bytes. The gas it measures is the
 * call's own, from cold state but for the module itself, which a transaction to it has warm
 * (EIP-2929), plus the CALL's own 100 and no refunds: never less than the transaction's.
 */
contract SimulationProbe {
    struct Read {
        address to;
        bytes data;
    }

    struct Outcome {
        uint256 blockNumber;
        uint256 timestamp;
        bytes[] before;
        bool success;
        bytes result;
        /// gas the call used inside this frame, before refunds (no intrinsic gas)
        uint256 gasUsed;
        /// empty when the call failed
        bytes[] afterwards;
    }

    function run(
        Read[] calldata before,
        address target,
        uint256 value,
        bytes calldata data,
        Read[] calldata afterwards
    ) external payable returns (Outcome memory o) {
        o.blockNumber = block.number;
        o.timestamp = block.timestamp;
        // the reads before, in a call that reverts: what they warm (EIP-2929) is forgotten with it,
        // so the call below pays the cold accesses it will pay in a transaction of its own
        if (before.length > 0) {
            try this.readThenRevert(before) {}
            catch (bytes memory results) {
                o.before = abi.decode(results, (bytes[]));
            }
        }
        // the module warm, as a transaction's `to` is: the CALL below pays 100 for it, not 2,600
        // (its code size, written where the measure goes below, so the optimizer keeps the read)
        o.gasUsed = target.code.length;
        uint256 start = gasleft();
        (o.success, o.result) = target.call{value: value}(data);
        o.gasUsed = start - gasleft();
        o.afterwards = o.success ? _read(afterwards) : new bytes[](0);
    }

    /// @notice Reverts with the reads' results, `abi.encode(bytes[])` (see `run`).
    function readThenRevert(Read[] calldata reads) external view {
        bytes memory out = abi.encode(_read(reads));
        assembly {
            revert(add(out, 32), mload(out))
        }
    }

    function _read(Read[] calldata reads) internal view returns (bytes[] memory out) {
        out = new bytes[](reads.length);
        for (uint256 i = 0; i < reads.length; i++) {
            (bool ok, bytes memory r) = reads[i].to.staticcall(reads[i].data);
            out[i] = ok ? r : bytes("");
        }
    }
}
