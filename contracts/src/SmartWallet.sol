// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @notice A minimal smart-contract wallet for the local chains: one EOA `owner` whose ECDSA
/// signatures the wallet accepts as its own through EIP-1271. The owner signs the hash it is
/// asked about directly (for typed data: the EIP-712 digest), without any wrapping, which is what
/// viem's verifyTypedData / verifyMessage pass to `isValidSignature` for a contract address.
contract SmartWallet {
    /// @dev EIP-1271 magic value: bytes4(keccak256("isValidSignature(bytes32,bytes)")).
    bytes4 internal constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 internal constant INVALID = 0xffffffff;

    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    /// @notice EIP-1271: MAGIC_VALUE when `signature` is the owner's over `hash`, else 0xffffffff.
    /// Never reverts, whatever the signature's length or content.
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address recovered, ECDSA.RecoverError err,) = ECDSA.tryRecoverCalldata(hash, signature);
        if (err != ECDSA.RecoverError.NoError || recovered == address(0) || recovered != owner) return INVALID;
        return MAGIC_VALUE;
    }
}
