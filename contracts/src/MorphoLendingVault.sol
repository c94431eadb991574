// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";

/// @notice A Morpho Blue market's parameters (its id is their keccak).
struct MorphoMarketParams {
    address loanToken;
    address collateralToken;
    address oracle;
    address irm;
    uint256 lltv;
}

/// @notice A Morpho Blue market's totals, as the interest-rate model reads them.
struct MorphoMarket {
    uint128 totalSupplyAssets;
    uint128 totalSupplyShares;
    uint128 totalBorrowAssets;
    uint128 totalBorrowShares;
    uint128 lastUpdate;
    uint128 fee;
}

/// @notice The part of Morpho Blue (1.0) the lending vault uses.
interface IMorphoBlue {
    function supply(
        MorphoMarketParams calldata marketParams,
        uint256 assets,
        uint256 shares,
        address onBehalf,
        bytes calldata data
    ) external returns (uint256, uint256);

    function withdraw(
        MorphoMarketParams calldata marketParams,
        uint256 assets,
        uint256 shares,
        address onBehalf,
        address receiver
    ) external returns (uint256, uint256);

    function position(bytes32 id, address user)
        external
        view
        returns (uint256 supplyShares, uint128 borrowShares, uint128 collateral);

    function market(bytes32 id)
        external
        view
        returns (
            uint128 totalSupplyAssets,
            uint128 totalSupplyShares,
            uint128 totalBorrowAssets,
            uint128 totalBorrowShares,
            uint128 lastUpdate,
            uint128 fee
        );
}

interface IMorphoIrm {
    function borrowRateView(MorphoMarketParams calldata marketParams, MorphoMarket calldata market)
        external
        view
        returns (uint256);
}

/**
 * @notice An ERC-4626 vault lending its asset on one Morpho Blue market: deposits are supplied to
 * the market, withdrawals taken from it. `totalAssets` is the vault's supply position including
 * the interest accrued since the market's last update, so the share price moves every second.
 */
contract MorphoLendingVault is ERC4626 {
    using SafeERC20 for IERC20;

    uint256 internal constant WAD = 1e18;
    uint256 internal constant VIRTUAL_SHARES = 1e6;
    uint256 internal constant VIRTUAL_ASSETS = 1;

    IMorphoBlue public immutable morpho;
    bytes32 public immutable marketId;
    address public immutable collateralToken;
    address public immutable oracle;
    address public immutable irm;
    uint256 public immutable lltv;

    error WrongLoanToken(address loanToken, address asset);

    constructor(IMorphoBlue morpho_, MorphoMarketParams memory params, string memory name_, string memory symbol_)
        ERC20(name_, symbol_)
        ERC4626(IERC20(params.loanToken))
    {
        morpho = morpho_;
        marketId = keccak256(abi.encode(params));
        collateralToken = params.collateralToken;
        oracle = params.oracle;
        irm = params.irm;
        lltv = params.lltv;
    }

    function marketParams() public view returns (MorphoMarketParams memory) {
        return MorphoMarketParams(asset(), collateralToken, oracle, irm, lltv);
    }

    function totalAssets() public view override returns (uint256) {
        (uint256 supplyShares,,) = morpho.position(marketId, address(this));
        (uint256 supplyAssets, uint256 totalShares,) = _expectedTotals();
        return supplyShares * (supplyAssets + VIRTUAL_ASSETS) / (totalShares + VIRTUAL_SHARES);
    }

    /// @notice What the market can pay out now (supply not borrowed).
    function availableLiquidity() public view returns (uint256) {
        (uint256 supplyAssets,, uint256 borrowAssets) = _expectedTotals();
        return supplyAssets > borrowAssets ? supplyAssets - borrowAssets : 0;
    }

    function maxWithdraw(address owner) public view override returns (uint256) {
        uint256 own = super.maxWithdraw(owner);
        uint256 liquid = availableLiquidity();
        return own < liquid ? own : liquid;
    }

    function maxRedeem(address owner) public view override returns (uint256) {
        uint256 own = super.maxRedeem(owner);
        uint256 liquid = convertToShares(availableLiquidity());
        return own < liquid ? own : liquid;
    }

    function _deposit(address caller, address receiver, uint256 assets, uint256 shares) internal override {
        super._deposit(caller, receiver, assets, shares);
        IERC20(asset()).forceApprove(address(morpho), assets);
        morpho.supply(marketParams(), assets, 0, address(this), "");
    }

    function _withdraw(address caller, address receiver, address owner, uint256 assets, uint256 shares)
        internal
        override
    {
        if (caller != owner) _spendAllowance(owner, caller, shares);
        _burn(owner, shares);
        morpho.withdraw(marketParams(), assets, 0, address(this), receiver);
        emit Withdraw(caller, receiver, owner, assets, shares);
    }

    /// The market's supply, shares and borrow with the interest accrued since its last update
    /// (Morpho's own formula: a third-order Taylor expansion of continuous compounding).
    function _expectedTotals()
        internal
        view
        returns (uint256 supplyAssets, uint256 supplyShares, uint256 borrowAssets)
    {
        MorphoMarket memory m;
        (m.totalSupplyAssets, m.totalSupplyShares, m.totalBorrowAssets, m.totalBorrowShares, m.lastUpdate, m.fee) =
            morpho.market(marketId);
        supplyAssets = m.totalSupplyAssets;
        supplyShares = m.totalSupplyShares;
        borrowAssets = m.totalBorrowAssets;
        uint256 elapsed = block.timestamp - m.lastUpdate;
        if (elapsed == 0 || borrowAssets == 0 || irm == address(0)) return (supplyAssets, supplyShares, borrowAssets);
        uint256 first = IMorphoIrm(irm).borrowRateView(marketParams(), m) * elapsed;
        uint256 second = first * first / (2 * WAD);
        uint256 interest = borrowAssets * (first + second + second * first / (3 * WAD)) / WAD;
        supplyAssets += interest;
        borrowAssets += interest;
        if (m.fee != 0) {
            uint256 feeAmount = interest * m.fee / WAD;
            supplyShares += feeAmount * (supplyShares + VIRTUAL_SHARES) / (supplyAssets - feeAmount + VIRTUAL_ASSETS);
        }
    }
}
