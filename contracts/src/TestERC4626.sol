// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Ownable2Step} from "@openzeppelin/contracts/access/Ownable2Step.sol";
import {AccessControl} from "@openzeppelin/contracts/access/AccessControl.sol";

/// @notice OpenZeppelin's ERC4626 as published (its virtual shares and assets, a chosen decimals
/// offset) with an owner, for the erc4626 family's tests: yield is an asset transfer to the vault,
/// and the owner can take assets out (a loss, as a strategy reporting one would).
contract OwnedERC4626 is ERC4626, Ownable {
    using SafeERC20 for IERC20;

    uint8 private immutable offset;

    constructor(IERC20 asset_, string memory name_, string memory symbol_, uint8 decimalsOffset_, address owner_)
        ERC20(name_, symbol_)
        ERC4626(asset_)
        Ownable(owner_)
    {
        offset = decimalsOffset_;
    }

    function _decimalsOffset() internal view override returns (uint8) {
        return offset;
    }

    /// @notice Moves `assets` of the vault's asset to `to`: the share price falls.
    function takeAssets(uint256 assets, address to) external onlyOwner {
        IERC20(asset()).safeTransfer(to, assets);
    }
}

/// @notice The same vault with OpenZeppelin's two-step ownership: a transfer is pending until the
/// new owner accepts it, and a transfer started to the zero address cancels the pending one.
contract TwoStepERC4626 is OwnedERC4626, Ownable2Step {
    constructor(IERC20 asset_, string memory name_, string memory symbol_, uint8 decimalsOffset_, address owner_)
        OwnedERC4626(asset_, name_, symbol_, decimalsOffset_, owner_)
    {}

    function transferOwnership(address newOwner) public override(Ownable, Ownable2Step) onlyOwner {
        Ownable2Step.transferOwnership(newOwner);
    }

    function _transferOwnership(address newOwner) internal override(Ownable, Ownable2Step) {
        Ownable2Step._transferOwnership(newOwner);
    }
}

/// @notice The same vault governed by OpenZeppelin AccessControl roles instead of an owner.
contract RoleManagedERC4626 is ERC4626, AccessControl {
    using SafeERC20 for IERC20;

    bytes32 public constant STRATEGIST_ROLE = keccak256("STRATEGIST_ROLE");

    constructor(IERC20 asset_, string memory name_, string memory symbol_, address admin, address strategist)
        ERC20(name_, symbol_)
        ERC4626(asset_)
    {
        _grantRole(DEFAULT_ADMIN_ROLE, admin);
        _grantRole(STRATEGIST_ROLE, strategist);
    }

    /// @notice A strategist reports a loss by moving `assets` out: the share price falls.
    function takeAssets(uint256 assets, address to) external onlyRole(STRATEGIST_ROLE) {
        IERC20(asset()).safeTransfer(to, assets);
    }
}
