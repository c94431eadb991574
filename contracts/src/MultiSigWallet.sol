// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";

/// @notice A Safe-like M-of-N multisig: owners sign the transaction hash off chain (EIP-191),
/// anyone submits `execTransaction` with the signatures sorted by signer address.
contract MultiSigWallet {
    event ExecutionSuccess(bytes32 txHash, uint256 payment);
    event ExecutionFailure(bytes32 txHash, uint256 payment);

    string public constant VERSION = "1.4.1";

    address[] private _owners;
    mapping(address => bool) public isOwner;
    uint256 private _threshold;
    uint256 public nonce;

    constructor(address[] memory owners_, uint256 threshold_) {
        require(threshold_ > 0 && threshold_ <= owners_.length, "MultiSig: bad threshold");
        for (uint256 i = 0; i < owners_.length; i++) {
            address o = owners_[i];
            require(o != address(0) && !isOwner[o], "MultiSig: bad owner");
            isOwner[o] = true;
            _owners.push(o);
        }
        _threshold = threshold_;
    }

    receive() external payable {}

    function getOwners() external view returns (address[] memory) {
        return _owners;
    }

    function getThreshold() external view returns (uint256) {
        return _threshold;
    }

    function getTransactionHash(address to, uint256 value, bytes calldata data, uint256 nonce_)
        public
        view
        returns (bytes32)
    {
        return keccak256(abi.encode(address(this), block.chainid, to, value, keccak256(data), nonce_));
    }

    function execTransaction(address to, uint256 value, bytes calldata data, bytes calldata signatures)
        external
        returns (bool)
    {
        bytes32 txHash = getTransactionHash(to, value, data, nonce);
        nonce += 1;
        _checkSignatures(txHash, signatures);
        (bool ok, bytes memory ret) = to.call{value: value}(data);
        if (!ok) {
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        emit ExecutionSuccess(txHash, 0);
        return true;
    }

    function _checkSignatures(bytes32 txHash, bytes calldata signatures) private view {
        require(signatures.length >= _threshold * 65, "MultiSig: too few signatures");
        bytes32 digest = MessageHashUtils.toEthSignedMessageHash(txHash);
        address last = address(0);
        for (uint256 i = 0; i < _threshold; i++) {
            address signer = ECDSA.recover(digest, signatures[i * 65:(i + 1) * 65]);
            require(isOwner[signer], "MultiSig: signer is not an owner");
            require(signer > last, "MultiSig: signatures not sorted");
            last = signer;
        }
    }
}
