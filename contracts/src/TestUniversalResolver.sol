// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice A stand-in for the ENS Universal Resolver on the local chains, where there is no ENS
/// registry: an owner-managed table node (namehash) -> address, answered through the interface
/// viem 2.x's getEnsAddress calls (`resolveWithGateways(bytes,bytes,string[])`, plus the older
/// `resolve(bytes,bytes)`) for the `addr(bytes32)` profile. An unknown name reverts with the
/// Universal Resolver's `ResolverNotFound(bytes)`, which viem turns into a null address.
contract TestUniversalResolver {
    error ResolverNotFound(bytes name);
    error UnsupportedResolverProfile(bytes4 selector);
    error NotOwner();

    /// @dev addr(bytes32)
    bytes4 internal constant ADDR_SELECTOR = 0x3b3b57de;

    address public immutable owner;
    mapping(bytes32 => address) public addrOf;

    constructor() {
        owner = msg.sender;
    }

    /// @notice Points `node` (namehash of the name) at `a`; address(0) removes the name.
    function setAddr(bytes32 node, address a) external {
        if (msg.sender != owner) revert NotOwner();
        addrOf[node] = a;
    }

    /// @param name DNS-encoded name (not read: the node in `data` identifies it)
    /// @param data an `addr(bytes32 node)` call
    /// @return result `abi.encode(address)`, as the name's resolver would answer `data`
    /// @return resolver this contract, which acts as every name's resolver
    function resolveWithGateways(bytes calldata name, bytes calldata data, string[] calldata)
        external
        view
        returns (bytes memory result, address resolver)
    {
        return _resolve(name, data);
    }

    function resolve(bytes calldata name, bytes calldata data) external view returns (bytes memory, address) {
        return _resolve(name, data);
    }

    function _resolve(bytes calldata name, bytes calldata data) internal view returns (bytes memory, address) {
        if (data.length < 4) revert UnsupportedResolverProfile(bytes4(0));
        bytes4 selector = bytes4(data[:4]);
        if (selector != ADDR_SELECTOR || data.length != 36) revert UnsupportedResolverProfile(selector);
        bytes32 node = bytes32(data[4:36]);
        address a = addrOf[node];
        if (a == address(0)) revert ResolverNotFound(name);
        return (abi.encode(a), address(this));
    }
}
