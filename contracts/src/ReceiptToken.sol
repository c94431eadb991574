// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @notice The separate share (receipt) token of a TokenizedVaultV2; only its vault mints,
/// burns and moves shares into escrow for withdrawal requests.
contract ReceiptToken is ERC20 {
    address public immutable vault;
    uint8 private immutable _decimals;

    constructor(string memory name_, string memory symbol_, uint8 decimals_) ERC20(name_, symbol_) {
        vault = msg.sender;
        _decimals = decimals_;
    }

    modifier onlyVault() {
        require(msg.sender == vault, "ReceiptToken: not vault");
        _;
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }

    function mint(address to, uint256 amount) external onlyVault {
        _mint(to, amount);
    }

    function burn(address from, uint256 amount) external onlyVault {
        _burn(from, amount);
    }

    function vaultTransfer(address from, address to, uint256 amount) external onlyVault {
        _transfer(from, to, amount);
    }
}
